"""CUDA path (Triton kernels compiled for the device) vs the torch reference. Skipped without CUDA.

The main cases use generated frames so they also run on a device machine without the shared
videos; one case adds real decoded frames where they are present.
"""

from __future__ import annotations

import pytest
import torch

from paravt.kernels import pixel_values, reference_pixel_values
from paravt.kernels.bench import generated_frames
from paravt.kernels.parity import step_diff

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def gpu_windows(generated_720p):
    odd = generated_frames(5, 240, 426, seed=3)  # not a multiple of 28/32, odd count
    return [generated_720p.cuda(), odd.cuda(), generated_720p[:1].cuda()]


def _check(windows, arch, layout):
    ours, grid = pixel_values(windows, arch=arch, layout=layout)  # CUDA default: float / Triton
    ref, ref_grid = reference_pixel_values([w.cpu() for w in windows], arch=arch, layout=layout)
    assert ours.is_cuda and torch.equal(grid.cpu(), ref_grid)
    d = step_diff(ours, ref, arch)
    print(f"triton {arch} {layout}: max {d.max_steps} step, {d.share_differing:.4%} differ")
    assert d.max_steps <= 1 and d.share_differing < 0.001
    # the same reference on the GPU (F.interpolate on CUDA = torchvision-on-GPU arithmetic)
    ref_gpu, _ = reference_pixel_values(windows, arch=arch, layout=layout)
    assert step_diff(ours, ref_gpu, arch).max_steps <= 1


@pytest.mark.parametrize("arch", ["qwen2.5-vl", "qwen3-vl"])
@pytest.mark.parametrize("layout", ["image", "video"])
def test_triton_matches_reference(arch, layout, gpu_windows):
    _check(gpu_windows, arch, layout)


def test_triton_matches_reference_on_real_frames(real_720p, real_pancake):
    _check([real_720p.cuda(), real_pancake.cuda()], "qwen3-vl", "video")


def test_triton_bf16(gpu_windows):
    a, _ = pixel_values(gpu_windows, layout="video")
    b, _ = pixel_values(gpu_windows, layout="video", out_dtype=torch.bfloat16)
    assert b.dtype == torch.bfloat16
    assert (a.to(torch.bfloat16).float() - b.float()).abs().max() <= 0.02


def test_uint8_mode_on_cuda_stays_two_pass(generated_720p, hf):
    ours, _ = pixel_values(generated_720p.cuda(), arch="qwen2.5-vl", resize="uint8")
    theirs, _ = hf.run("qwen2.5-vl", "torchvision", [generated_720p], "image")  # on CPU
    assert step_diff(ours, theirs, "qwen2.5-vl").max_steps <= 1
