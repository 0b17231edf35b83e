"""Fused frame preprocessing for Qwen-VL: uint8 frames -> ``pixel_values`` and ``grid_thw``.

Public API:

* ``pixel_values(frames, arch, min_pixels, max_pixels, layout, resize, out_dtype)`` — the entry
  point (Triton on CUDA, torch on CPU).
* ``smart_resize(h, w, factor, min_pixels, max_pixels)`` — qwen-vl-utils' size rule.
* ``resized_size(h, w, arch, ...)`` / ``tokens_per_frame(...)`` — what one frame becomes, for
  callers that budget image tokens without touching pixels.
* ``reference_pixel_values`` — the torch oracle of docs/PREPROCESSING.md §8.
"""

from paravt.kernels.api import default_resize, pixel_values
from paravt.kernels.reference import reference_pixel_values
from paravt.kernels.spec import (
    ARCHS,
    LAYOUTS,
    RESIZE_MODES,
    ArchSpec,
    PixelInputError,
    arch_spec,
    resized_size,
    smart_resize,
    tokens_per_frame,
)

__all__ = [
    "ARCHS",
    "LAYOUTS",
    "RESIZE_MODES",
    "ArchSpec",
    "PixelInputError",
    "arch_spec",
    "default_resize",
    "pixel_values",
    "reference_pixel_values",
    "resized_size",
    "smart_resize",
    "tokens_per_frame",
]
