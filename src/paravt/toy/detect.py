"""Read the needle off decoded pixels: which palette colour, if any, a frame shows.

Shared by the oracle (it reads the frames a tool call returned) and by the generator's visibility
measurement (it reads real overview frames), so both agree on what "visible" means. The rule:
pixels whose channel spread (max − min) is large are saturated — the grey background never is —
and when enough of them are, their mean colour is matched to the nearest palette colour.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from paravt.toy.task import PALETTE

__all__ = ["needle_colour"]

#: channel spread above which a pixel counts as coloured (grey + codec noise stays far below)
SATURATION_MIN = 80
#: share of the frame that must be coloured (the needle covers 1/16 of it)
AREA_MIN = 1 / 64


def _hwc(frame: Any) -> np.ndarray:
    """A frame as ``[H, W, 3]`` numpy: torch ``[3, H, W]`` (decoded frames) or numpy HWC."""
    arr = frame.numpy() if hasattr(frame, "numpy") else np.asarray(frame)
    if arr.ndim == 3 and arr.shape[0] == 3 and arr.shape[-1] != 3:
        arr = arr.transpose(1, 2, 0)
    return arr


def needle_colour(frame: Any) -> str | None:
    """The palette colour shown by ``frame``, or ``None`` when no saturated patch is there."""
    arr = _hwc(frame).astype(np.int16)
    spread = arr.max(axis=2) - arr.min(axis=2)
    mask = spread > SATURATION_MIN
    if mask.sum() < AREA_MIN * mask.size:
        return None
    mean = arr[mask].mean(axis=0)
    names = list(PALETTE)
    dist = [float(np.sum((mean - np.array(PALETTE[c])) ** 2)) for c in names]
    return names[int(np.argmin(dist))]
