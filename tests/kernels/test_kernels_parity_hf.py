"""Parity with transformers' Qwen-VL processors on real and generated frames.

For each arch and layout: identical ``grid_thw`` and row/column layout, and each resize option
within 1 uint8 step of its own reference after undoing normalisation:

* ``"uint8"`` (two-pass) vs transformers' torchvision-backed processors (image, video) and its PIL
  image processor;
* ``"float"`` (one-pass) vs ``F.interpolate(antialias=True)`` + clamp + round (the reference).

The max and share of differing values are printed (``pytest -s``) and kept as test properties;
``bench-kernels`` reports the same numbers on 64 frames.
"""

from __future__ import annotations

import pytest
import torch

from paravt.kernels import pixel_values, reference_pixel_values
from paravt.kernels.parity import step_diff

ARCHS = ["qwen2.5-vl", "qwen3-vl"]


def _windows(name, real_720p, generated_720p, real_pancake):
    if name == "real_720p":
        return [real_720p[:3], real_720p[3:]]  # 3 + 3 frames, odd windows
    if name == "generated_720p":
        return [generated_720p]
    return [real_pancake]  # 426x240: not a multiple of 28/32, 5 frames


@pytest.fixture(params=["real_720p", "generated_720p", "real_pancake"])
def windows(request, real_720p, generated_720p, real_pancake):
    return request.param, _windows(request.param, real_720p, generated_720p, real_pancake)


def _report(record_property, label, d):
    record_property(label, d.as_dict())
    print(
        f"{label}: max {d.max_steps} step(s), {d.share_differing:.4%} of {d.values} values differ"
    )


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("layout", ["image", "video"])
def test_uint8_mode_matches_hf_torchvision_processor(arch, layout, windows, hf, record_property):
    name, wins = windows
    ours, grid = pixel_values(wins, arch=arch, layout=layout, resize="uint8")
    theirs, their_grid = hf.run(arch, "torchvision", wins, layout)
    assert torch.equal(grid, their_grid.to(torch.long))
    assert ours.shape == theirs.shape
    d = step_diff(ours, theirs, arch)
    _report(record_property, f"{name} {arch} {layout} uint8 vs HF torchvision", d)
    assert d.max_steps <= 1
    # same resize kernel, same float32 formula: in practice bit-identical
    assert torch.equal(ours, theirs)


@pytest.mark.parametrize("arch", ARCHS)
def test_uint8_mode_matches_hf_pil_processor(arch, windows, hf, record_property):
    name, wins = windows
    ours, grid = pixel_values(wins, arch=arch, layout="image", resize="uint8")
    theirs, their_grid = hf.run(arch, "pil", wins, "image")
    assert torch.equal(grid, their_grid.to(torch.long))
    d = step_diff(ours, theirs, arch)
    _report(record_property, f"{name} {arch} uint8 vs HF PIL", d)
    assert d.max_steps <= 1 and d.share_differing < 0.01


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("layout", ["image", "video"])
def test_float_mode_matches_one_pass_reference(arch, layout, windows, hf, record_property):
    name, wins = windows
    ours, grid = pixel_values(wins, arch=arch, layout=layout, resize="float")
    ref, ref_grid = reference_pixel_values(wins, arch=arch, layout=layout, resize="float")
    assert torch.equal(grid, ref_grid)
    d = step_diff(ours, ref, arch)
    _report(record_property, f"{name} {arch} {layout} float vs F.interpolate reference", d)
    assert d.max_steps <= 1
    # the layout is the processors' too: same grid and shape as transformers
    theirs, their_grid = hf.run(arch, "torchvision", wins, layout)
    assert torch.equal(grid, their_grid.to(torch.long)) and ours.shape == theirs.shape


@pytest.mark.parametrize("arch", ARCHS)
def test_two_pass_reference_models_hf(arch, real_720p, hf, record_property):
    wins = [real_720p[:4]]
    model, _ = reference_pixel_values(wins, arch=arch, layout="image", resize="uint8")
    for backend in ("torchvision", "pil"):
        theirs, _ = hf.run(arch, backend, wins, "image")
        d = step_diff(model, theirs, arch)
        _report(record_property, f"two-pass float model {arch} vs HF {backend}", d)
        assert d.max_steps <= 1 and d.share_differing < 0.01


def test_the_two_arithmetics_really_differ_at_sharp_edges(real_720p, record_property):
    """Why both options exist: one-pass and two-pass disagree by many steps at edges (§5.3)."""
    f, _ = pixel_values(real_720p, arch="qwen2.5-vl", resize="float")
    u, _ = pixel_values(real_720p, arch="qwen2.5-vl", resize="uint8")
    d = step_diff(f, u, "qwen2.5-vl")
    _report(record_property, "float vs uint8 (ecosystem gap)", d)
    assert d.max_steps >= 4
    assert 0.0005 < d.share_differing < 0.2
