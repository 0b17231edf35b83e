"""Size rule, per-frame token counts and the AA-bicubic tap tables."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from paravt.kernels import PixelInputError, resized_size, smart_resize, tokens_per_frame
from paravt.kernels.weights import tap_table

sizes = st.integers(min_value=32, max_value=4000)
budgets = st.sampled_from([(784, 50176), (3136, 12845056), (784, 4096), (65536, 16777216)])


@settings(max_examples=300, deadline=None)
@given(h=sizes, w=sizes, factor=st.sampled_from([28, 32]), budget=budgets)
def test_smart_resize_is_qwen_vl_utils_rule(h, w, factor, budget):
    from qwen_vl_utils.vision_process import smart_resize as qvu
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as hf

    lo, hi = budget
    if max(h, w) / min(h, w) > 200:
        return
    ours = smart_resize(h, w, factor, lo, hi)
    expected = qvu(h, w, factor, lo, hi)
    if 0 in expected:  # qwen-vl-utils floors a side to 0 here; ours clamps like transformers
        assert ours == hf(h, w, factor, lo, hi)
        return
    assert ours == expected
    assert ours == hf(h, w, factor, lo, hi)  # both sides >= factor: the two copies agree
    assert ours[0] % factor == 0 and ours[1] % factor == 0


def test_resized_size_and_tokens_for_720p():
    assert resized_size(720, 1280, "qwen2.5-vl") == (168, 280)
    assert resized_size(720, 1280, "qwen3-vl") == (160, 288)
    assert resized_size(1080, 1920, "qwen2.5-vl") == (168, 280)
    assert tokens_per_frame(720, 1280, "qwen2.5-vl") == 60
    assert tokens_per_frame(720, 1280, "qwen3-vl") == 45
    assert tokens_per_frame(720, 1280, "qwen3-vl", layout="video") == 22.5
    # 426x240 (pancake) is not a multiple of the factor on either side
    assert resized_size(240, 426, "qwen2.5-vl") == (168, 280)


def test_size_rule_rejects_bad_budgets_and_shapes():
    with pytest.raises(PixelInputError, match="min_pixels"):
        smart_resize(720, 1280, 28, min_pixels=10_000, max_pixels=5_000)
    with pytest.raises(PixelInputError, match="aspect ratio"):
        resized_size(20, 4020, "qwen2.5-vl")
    with pytest.raises(PixelInputError, match="layout"):
        tokens_per_frame(720, 1280, layout="movie")


@pytest.mark.parametrize(
    "n_in,n_out", [(1280, 280), (720, 168), (426, 280), (90, 84), (33, 56), (14, 28)]
)
def test_tap_tables_reproduce_torch_aa_bicubic(n_in, n_out):
    t = tap_table(n_in, n_out)
    assert t.weights.shape == (n_out, t.taps)
    assert torch.allclose(
        t.weights.double().sum(1), torch.ones(n_out, dtype=torch.float64), atol=1e-6
    )
    assert int(t.starts.min()) >= 0 and int(t.starts.max()) + t.taps <= n_in
    x = torch.rand(2, 3, 7, n_in, dtype=torch.float64) * 255
    ours = x.float() @ t.dense().T
    ref = F.interpolate(x, size=(7, n_out), mode="bicubic", align_corners=False, antialias=True)
    assert (ours.double() - ref).abs().max() < 1e-3
