"""What a Qwen-VL vision input is: per-architecture constants, the size rule, and input checks.

Everything here is plain Python so that callers that only need token counts (the episode engine
budgets ``<|image_pad|>`` tokens per frame) never touch torch. The numbers come from
docs/PREPROCESSING.md §5.2 (size rule) and §6 (processor constants).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from paravt.errors import UserError
from paravt.video.config import WINDOW_MAX_PIXELS, WINDOW_MIN_PIXELS

__all__ = ["ARCHS", "arch_spec", "smart_resize", "tokens_per_frame"]

MAX_ASPECT_RATIO = 200
LAYOUTS = ("image", "video")
RESIZE_MODES = ("float", "uint8")

_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
_HALF = (0.5, 0.5, 0.5)


class PixelInputError(UserError, ValueError):
    """Frames or arguments that ``pixel_values`` cannot turn into model input.

    Also a ``ValueError`` so generic callers that guard against bad values keep working.
    """


@dataclass(frozen=True)
class ArchSpec:
    """The vision-processor constants of one model family."""

    name: str
    patch_size: int
    temporal_patch_size: int
    merge_size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]

    @property
    def factor(self) -> int:
        """Side lengths must be multiples of this (one merged LLM token covers factor x factor)."""
        return self.patch_size * self.merge_size

    @property
    def patch_dim(self) -> int:
        """Columns of ``pixel_values``: channel x time x patch row x patch column."""
        return 3 * self.temporal_patch_size * self.patch_size * self.patch_size


ARCHS: dict[str, ArchSpec] = {
    "qwen2.5-vl": ArchSpec("qwen2.5-vl", 14, 2, 2, _CLIP_MEAN, _CLIP_STD),
    "qwen3-vl": ArchSpec("qwen3-vl", 16, 2, 2, _HALF, _HALF),
}


def arch_spec(arch: str) -> ArchSpec:
    try:
        return ARCHS[arch]
    except KeyError:
        raise PixelInputError(
            f"arch={arch!r} is not supported; use one of {sorted(ARCHS)}"
        ) from None


def smart_resize(
    height: int,
    width: int,
    factor: int,
    min_pixels: int = WINDOW_MIN_PIXELS,
    max_pixels: int = WINDOW_MAX_PIXELS,
) -> tuple[int, int]:
    """Output (h, w) of a frame under qwen-vl-utils' size rule (docs/PREPROCESSING.md §5.2).

    Both sides become multiples of ``factor``, the area lands in [min_pixels, max_pixels] and the
    aspect ratio is kept as closely as the grid allows. One deliberate difference: where
    qwen-vl-utils would floor a side to 0 (an aspect ratio near 200 under a small budget), the side
    is clamped to ``factor`` as transformers' copy of the rule does, since a 0-pixel side is
    never usable.
    """
    if height <= 0 or width <= 0:
        raise PixelInputError(f"frame size {height}x{width} is empty; frames need at least 1 pixel")
    if max_pixels <= 0 or min_pixels < 0:
        raise PixelInputError(
            f"pixel budget min_pixels={min_pixels}, max_pixels={max_pixels} is not usable; "
            "pass 0 <= min_pixels <= max_pixels, max_pixels > 0 "
            f"(ParaVT: {WINDOW_MIN_PIXELS} and {WINDOW_MAX_PIXELS})"
        )
    if min_pixels > max_pixels:
        raise PixelInputError(
            f"min_pixels={min_pixels} is larger than max_pixels={max_pixels}; "
            "pass min_pixels <= max_pixels"
        )
    ratio = max(height, width) / min(height, width)
    if ratio > MAX_ASPECT_RATIO:
        raise PixelInputError(
            f"frame size {height}x{width} has aspect ratio {ratio:.1f}, over the limit of "
            f"{MAX_ASPECT_RATIO} that Qwen-VL processors accept; crop the frames first"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def resized_size(
    height: int,
    width: int,
    arch: str = "qwen3-vl",
    min_pixels: int = WINDOW_MIN_PIXELS,
    max_pixels: int = WINDOW_MAX_PIXELS,
) -> tuple[int, int]:
    """The (h, w) ``pixel_values`` resizes a ``height`` x ``width`` frame to for ``arch``."""
    spec = arch_spec(arch)
    check_frame_size(height, width, spec)
    return smart_resize(height, width, spec.factor, min_pixels, max_pixels)


def tokens_per_frame(
    height: int,
    width: int,
    arch: str = "qwen3-vl",
    min_pixels: int = WINDOW_MIN_PIXELS,
    max_pixels: int = WINDOW_MAX_PIXELS,
    layout: str = "image",
) -> float:
    """LLM vision tokens one source frame costs (after the 2x2 merge).

    Image layout: every frame is its own temporal group, so (h/p)(w/p)/m^2 tokens. Video layout:
    two frames share one group, so half of that per frame (an odd last frame is padded, which
    costs a full group).
    """
    spec = arch_spec(arch)
    h, w = resized_size(height, width, arch, min_pixels, max_pixels)
    per_group = (h // spec.patch_size) * (w // spec.patch_size) // (spec.merge_size**2)
    if layout == "image":
        return float(per_group)
    if layout == "video":
        return per_group / spec.temporal_patch_size
    raise PixelInputError(f"layout={layout!r} is not one of {list(LAYOUTS)}")


def check_frame_size(height: int, width: int, spec: ArchSpec, what: str = "frames") -> None:
    """Reject frames too small to hold one patch, or too elongated for the size rule."""
    if height < spec.patch_size or width < spec.patch_size:
        raise PixelInputError(
            f"{what} of size {height}x{width} are smaller than one {spec.patch_size}x"
            f"{spec.patch_size} {spec.name} patch; decode at a larger size or drop them"
        )
    ratio = max(height, width) / min(height, width)
    if ratio > MAX_ASPECT_RATIO:
        raise PixelInputError(
            f"{what} of size {height}x{width} have aspect ratio {ratio:.1f}, over the limit of "
            f"{MAX_ASPECT_RATIO} that Qwen-VL processors accept; crop the frames first"
        )
