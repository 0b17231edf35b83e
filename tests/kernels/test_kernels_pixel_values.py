"""pixel_values behaviour: layouts, windows, padding, dtypes, defaults, agreement with the oracle."""

from __future__ import annotations

import pytest
import torch

from paravt.kernels import (
    arch_spec,
    default_resize,
    pixel_values,
    reference_pixel_values,
    resized_size,
    tokens_per_frame,
)
from paravt.kernels.parity import step_diff
from paravt.kernels.reference import patchify_video


@pytest.mark.parametrize("arch", ["qwen2.5-vl", "qwen3-vl"])
def test_windows_of_different_sizes(arch, real_pancake, real_bunny):
    spec = arch_spec(arch)
    windows = [real_pancake, real_bunny]  # 5 frames 240x426, 3 frames 180x320
    pv_img, g_img = pixel_values(windows, arch=arch, layout="image")
    pv_vid, g_vid = pixel_values(windows, arch=arch, layout="video")
    (h1, w1), (h2, w2) = resized_size(240, 426, arch), resized_size(180, 320, arch)
    p = spec.patch_size
    assert g_img.tolist() == [[1, h1 // p, w1 // p]] * 5 + [[1, h2 // p, w2 // p]] * 3
    assert g_vid.tolist() == [[3, h1 // p, w1 // p], [2, h2 // p, w2 // p]]
    assert pv_img.shape == (int(g_img.prod(1).sum()), spec.patch_dim)
    assert pv_vid.shape == (int(g_vid.prod(1).sum()), spec.patch_dim)
    assert pv_img.dtype == torch.float32 and g_img.dtype == torch.long
    # each frame costs tokens_per_frame LLM tokens (2x2 merge) in the image layout
    assert pv_img.shape[0] // 4 == 5 * tokens_per_frame(240, 426, arch) + 3 * tokens_per_frame(
        180, 320, arch
    )


@pytest.mark.parametrize("resize", ["float", "uint8"])
def test_video_layout_pads_odd_windows_with_the_last_frame(real_pancake, resize):
    odd = real_pancake[:3]
    padded = real_pancake[[0, 1, 2, 2]]
    a, ga = pixel_values(odd, layout="video", resize=resize)
    b, gb = pixel_values(padded, layout="video", resize=resize)
    assert torch.equal(a, b) and torch.equal(ga, gb)
    one, g1 = pixel_values(real_pancake[:1], layout="video", resize=resize)
    assert g1.tolist() == [[1, 10, 18]]
    cols = one.view(one.shape[0], 3, 2, -1)
    assert torch.equal(cols[:, :, 0], cols[:, :, 1])


def test_image_layout_repeats_each_frame_in_both_temporal_slots(real_bunny):
    pv, _ = pixel_values(real_bunny, arch="qwen2.5-vl", layout="image")
    cols = pv.view(pv.shape[0], 3, 2, 14 * 14)
    assert torch.equal(cols[:, :, 0], cols[:, :, 1])
    # and a frame's rows equal the video layout of that frame paired with itself
    single = real_bunny[1:2]
    img, _ = pixel_values(single, arch="qwen2.5-vl", layout="image")
    vid, _ = pixel_values(single.expand(2, -1, -1, -1), arch="qwen2.5-vl", layout="video")
    assert torch.equal(img, vid)


@pytest.mark.parametrize("arch", ["qwen2.5-vl", "qwen3-vl"])
@pytest.mark.parametrize("layout", ["image", "video"])
def test_float_mode_is_the_reference_bit_for_bit(arch, layout, real_pancake, real_bunny):
    windows = [real_pancake, real_bunny.contiguous()]  # channels-last and NCHW inputs
    ours, g1 = pixel_values(windows, arch=arch, layout=layout, resize="float")
    ref, g2 = reference_pixel_values(windows, arch=arch, layout=layout, resize="float")
    assert torch.equal(g1, g2)
    assert torch.equal(ours, ref)


def test_layout_matches_an_independent_index_formula(real_bunny):
    """Spot-check §6's row/column formula against the view/permute implementation."""
    spec = arch_spec("qwen3-vl")
    v = torch.randn(4, 3, 64, 96)
    pv, (_, gh, gw) = patchify_video(v, spec)
    p, m, tp = 16, 2, 2
    g = torch.Generator().manual_seed(0)
    for _ in range(200):
        f, ch, y, x = (int(torch.randint(0, s, (1,), generator=g)) for s in (4, 3, 64, 96))
        tg, tt = divmod(f, tp)
        ph, yy = divmod(y, p)
        pw, xx = divmod(x, p)
        bh, mh = divmod(ph, m)
        bw, mw = divmod(pw, m)
        row = ((tg * (gh // m) + bh) * (gw // m) + bw) * m * m + mh * m + mw
        col = ((ch * tp + tt) * p + yy) * p + xx
        assert pv[row, col] == v[f, ch, y, x]


def test_out_dtype_bf16_is_the_float32_result_rounded(real_bunny):
    a, _ = pixel_values(real_bunny, layout="video")
    b, _ = pixel_values(real_bunny, layout="video", out_dtype=torch.bfloat16)
    assert b.dtype == torch.bfloat16
    assert torch.equal(b, a.to(torch.bfloat16))


def test_uint8_mode_is_within_one_step_of_the_two_pass_model(real_720p):
    ours, _ = pixel_values(real_720p[:3], arch="qwen3-vl", resize="uint8")
    model, _ = reference_pixel_values(real_720p[:3], arch="qwen3-vl", resize="uint8")
    d = step_diff(ours, model, "qwen3-vl")
    print(f"uint8 mode vs two-pass float model: max {d.max_steps} step, {d.share_differing:.4%}")
    assert d.max_steps <= 1 and d.share_differing < 0.01


def test_default_resize_per_device():
    assert default_resize("cpu") == "uint8"
    assert default_resize("cuda") == "float"
    assert default_resize(torch.device("cuda", 0)) == "float"


def test_frames_already_at_target_size_are_not_resampled():
    from paravt.kernels.reference import normalize

    spec = arch_spec("qwen2.5-vl")
    x = torch.randint(0, 256, (2, 3, 56, 84), dtype=torch.uint8)  # already a 28-multiple
    expected, _ = patchify_video(normalize(x, spec), spec)
    for resize in ("float", "uint8"):
        pv, grid = pixel_values(x, arch="qwen2.5-vl", layout="video", resize=resize)
        assert grid.tolist() == [[1, 4, 6]]
        assert torch.equal(pv, expected)


@pytest.mark.parametrize("resize", ["float", "uint8"])
def test_strided_crop_views_are_accepted(real_720p, resize):
    crop = real_720p[:2, :, 100:400, 200:900]  # a view: neither NCHW- nor channels-last-contiguous
    a, ga = pixel_values(crop, arch="qwen3-vl", layout="video", resize=resize)
    b, gb = pixel_values(crop.contiguous(), arch="qwen3-vl", layout="video", resize=resize)
    assert torch.equal(ga, gb) and torch.equal(a, b)


@pytest.mark.parametrize("layout", ["image", "video"])
def test_long_odd_windows_cross_internal_chunks(real_bunny, layout, hf):
    """19 frames: more than one internal chunk of frames, and an odd count (padding at the end)."""
    frames = real_bunny[torch.arange(19) % 3]
    ours, grid = pixel_values(frames, arch="qwen2.5-vl", layout=layout, resize="float")
    ref, ref_grid = reference_pixel_values(frames, arch="qwen2.5-vl", layout=layout, resize="float")
    assert torch.equal(grid, ref_grid) and torch.equal(ours, ref)
    ours, grid = pixel_values(frames, arch="qwen2.5-vl", layout=layout, resize="uint8")
    theirs, their_grid = hf.run("qwen2.5-vl", "torchvision", [frames], layout)
    assert torch.equal(grid, their_grid) and torch.equal(ours, theirs)
