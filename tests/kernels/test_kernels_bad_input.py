"""Bad input to pixel_values -> PixelInputError (a UserError) that names the input and the fix."""

from __future__ import annotations

import pytest
import torch

from paravt.errors import UserError
from paravt.kernels import PixelInputError, pixel_values


def frames(n=2, c=3, h=64, w=96, dtype=torch.uint8):
    return torch.zeros(n, c, h, w, dtype=dtype)


@pytest.mark.parametrize(
    "bad, match",
    [
        (frames(dtype=torch.float32), "dtype torch.float32.*uint8"),
        (frames(dtype=torch.int64), "dtype torch.int64"),
        (frames(c=4), "4 channels.*RGB"),
        (frames(c=1), "1 channels.*RGB"),
        (torch.zeros(64, 96, 3, dtype=torch.uint8), r"shape \(64, 96, 3\).*\[n, 3, H, W\]"),
        (frames(n=0), "holds no frames"),
        ([], "empty list"),
        ([frames(), "clip.mp4"], r"frames\[1\] is a str"),
        (frames(h=10, w=300), "smaller than one 16x16 qwen3-vl patch"),
        (frames(h=15, w=15), "smaller than one 16x16"),
        (frames(h=16, w=3300), "aspect ratio 206.2"),
        ([frames(), frames(h=8)], r"frames\[1\] of size 8x96"),
        ("frames.mp4", "uint8 tensor"),
    ],
)
def test_bad_frames_raise_typed_errors(bad, match):
    with pytest.raises(PixelInputError, match=match) as info:
        pixel_values(bad, arch="qwen3-vl")
    assert isinstance(info.value, UserError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"arch": "qwen2-vl-72b"}, "arch='qwen2-vl-72b'.*qwen2.5-vl"),
        ({"layout": "movie"}, "layout='movie'"),
        ({"resize": "bilinear"}, "resize='bilinear'.*float.*uint8"),
        ({"min_pixels": 100_000, "max_pixels": 50_176}, "min_pixels=100000"),
        ({"max_pixels": 0}, "max_pixels=0 is not usable"),
        ({"out_dtype": torch.int32}, "out_dtype"),
    ],
)
def test_bad_arguments_raise_typed_errors(kwargs, match):
    with pytest.raises(PixelInputError, match=match):
        pixel_values(frames(), **kwargs)


def test_qwen25_patch_is_14_px():
    # 15 px fits one 14 px patch (Qwen2.5-VL) but not one 16 px patch (Qwen3-VL)
    _, grid = pixel_values(frames(h=15, w=40), arch="qwen2.5-vl")
    assert grid.tolist() == [[1, 2, 2], [1, 2, 2]]
    with pytest.raises(PixelInputError):
        pixel_values(frames(h=15, w=40), arch="qwen3-vl")
