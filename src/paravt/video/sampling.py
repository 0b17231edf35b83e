"""Which times to sample: pure functions, no decoding.

Three rules live here:

* time-uniform: ``k`` times at the centres of ``k`` equal slices of a span. Centres (rather than
  both ends) keep every time strictly inside the playable range, so no request falls on the
  end-of-stream boundary where no frame is shown;
* the window rule of docs/PROTOCOL.md §3: 1 frame per second of window, at least 2, at most 16,
  even;
* the qwen-vl-utils index rule (docs/PREPROCESSING.md §3-§4), reproduced to the index for
  comparisons with the paper: ``torch.linspace(0, n-1, k).round()`` in float32, round-half-even.
"""

from __future__ import annotations

import math

import torch

__all__ = ["uniform_times", "window_frame_count"]


def uniform_times(start: float, end: float, k: int) -> list[float]:
    """``k`` time-uniform sample times in ``[start, end)``: the centres of ``k`` equal slices."""
    if k <= 0 or not end > start:
        return []
    step = (end - start) / k
    return [start + (i + 0.5) * step for i in range(k)]


def floor_even(x: float) -> int:
    return int(math.floor(x / 2.0)) * 2


def window_frame_count(length: float, fps: float, min_frames: int, max_frames: int) -> int:
    """Frames for a window of ``length`` seconds: ``fps`` per second, clamped, floored to even.

    Matches the reference's 30 fps examples: 10 s -> 10, 15 s -> 14, 20 s -> 16, 1 s -> 2, 2.5 s -> 2.
    """
    lo = max(2, int(math.ceil(min_frames / 2.0)) * 2)
    hi = max(lo, floor_even(max_frames))
    n = min(max(length * fps, lo), hi)
    return max(2, floor_even(n))


def round_half_even_by(x: float, factor: int) -> int:
    """qwen-vl-utils ``round_by_factor``: Python ``round`` (half to even) of ``x / factor``."""
    return int(round(x / factor) * factor)


def qwen_overview_indices(num_frames: int, k: int) -> tuple[list[int], list[str]]:
    """Frame indices qwen-vl-utils picks for ``fetch_video(nframes=k)`` on a whole video.

    Returns (indices, warnings). Where qwen-vl-utils would raise (fewer than 2 or more than
    ``num_frames`` frames), the count is clamped into range and a warning says so.
    """
    warnings: list[str] = []
    n = round_half_even_by(k, 2)
    if n > num_frames:
        clamped = max(2, floor_even(num_frames)) if num_frames >= 2 else num_frames
        warnings.append(
            f"qwen-vl-utils mode: {k} frames requested but the video has {num_frames}; using {clamped}"
        )
        n = clamped
    if n < 2:
        if num_frames >= 2:
            warnings.append(f"qwen-vl-utils mode: {k} frames rounds to {n}; using 2")
            n = 2
        else:
            return list(range(num_frames)), warnings
    idx = torch.linspace(0, num_frames - 1, n).round().long().tolist()
    return [int(i) for i in idx], warnings
