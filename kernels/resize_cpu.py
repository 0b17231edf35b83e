"""The torch production resize (CPU, and any device without a Triton kernel).

``"uint8"``: torchvision's native uint8 antialiased bicubic kernel on CPU — the exact arithmetic
transformers' torchvision-backed processors use on CPU, and about 3.5x faster than float
interpolation. On other devices torchvision would silently switch to float arithmetic, so there
the reference's two-pass float model is used instead to keep the name honest.

``"float"``: ``F.interpolate`` on float32 + clamp + round-half-even (qwen-vl-utils' arithmetic),
in chunks of frames so the float copy of 720p input stays small.
"""

from __future__ import annotations

import torch
from torchvision.transforms.v2 import functional as tvF

from paravt.kernels.reference import resize_one_pass, resize_two_pass

__all__: list[str] = []  # nothing here is for the other rooms


def resize_uint8(frames: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """uint8 [n,3,H,W] -> uint8 [n,3,h,w], two-pass uint8 arithmetic (Pillow-compatible)."""
    if frames.shape[-2:] == (h, w):
        return frames  # what torchvision (and so transformers) does: no resample at equal size
    if frames.device.type != "cpu":
        return resize_two_pass(frames, h, w)
    # No .contiguous(): torchvision's uint8 kernel is fastest on channels-last frames, which is
    # how torchcodec decodes them.
    return tvF.resize(
        frames,
        [h, w],
        interpolation=tvF.InterpolationMode.BICUBIC,
        antialias=True,
    )


def resize_float(frames: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """uint8 [n,3,H,W] -> uint8 [n,3,h,w], one-pass float32 arithmetic (qwen-vl-utils)."""
    if frames.shape[-2:] == (h, w):
        return frames  # the float filter at scale 1 is the identity up to rounding
    return resize_one_pass(frames, h, w)


def resize(frames: torch.Tensor, h: int, w: int, mode: str) -> torch.Tensor:
    if mode == "uint8":
        return resize_uint8(frames, h, w)
    return resize_float(frames, h, w)
