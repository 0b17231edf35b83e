"""Tap tables of the antialiased bicubic filter (docs/PREPROCESSING.md §5.3), one axis at a time.

The filter is separable, so a resize is two 1-D passes, each described by: for every output
index, the first input index it reads (``starts``) and up to ``taps`` normalised weights. The
Triton kernels read these tables instead of evaluating the cubic per pixel; the torch reference
turns them into a dense band matrix for its two-pass (Pillow-style) model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch

__all__: list[str] = []  # nothing here is for the other rooms

CUBIC_A = -0.5  # Keys' a for the antialiased filter (torch/Pillow), not -0.75 of plain bicubic.


def _cubic(x: float) -> float:
    x = abs(x)
    if x < 1.0:
        return ((CUBIC_A + 2.0) * x - (CUBIC_A + 3.0)) * x * x + 1.0
    if x < 2.0:
        return (((x - 5.0) * x + 8.0) * x - 4.0) * CUBIC_A
    return 0.0


@dataclass(frozen=True)
class TapTable:
    """Taps of one axis: output i reads input ``starts[i] + t`` with ``weights[i, t]``.

    Unused trailing taps carry weight 0 and a start that keeps ``starts[i] + t`` inside the
    input, so kernels may read all ``taps`` entries without masks.
    """

    in_size: int
    out_size: int
    taps: int
    starts: torch.Tensor  # int32 [out]
    weights: torch.Tensor  # float32 [out, taps]

    def dense(self) -> torch.Tensor:
        """The [out, in] float32 matrix with these taps (for matmul-based passes)."""
        m = torch.zeros(self.out_size, self.in_size, dtype=torch.float64)
        idx = self.starts.long()[:, None] + torch.arange(self.taps)[None, :]
        m.scatter_add_(1, idx, self.weights.double())
        return m.float()


@lru_cache(maxsize=256)
def tap_table(in_size: int, out_size: int) -> TapTable:
    """Weights of the AA-bicubic resize of one axis from ``in_size`` to ``out_size`` samples.

    Computed in float64 and rounded once to float32; torch's own kernel computes them in the
    input's precision, which moves results by far less than one rounding step.
    """
    scale = in_size / out_size
    support = 2.0 * scale if scale >= 1.0 else 2.0
    invscale = 1.0 / scale if scale >= 1.0 else 1.0
    rows: list[tuple[int, list[float]]] = []
    for i in range(out_size):
        center = scale * (i + 0.5)
        j0 = max(int(center - support + 0.5), 0)
        j1 = min(int(center + support + 0.5), in_size)
        w = [_cubic((j - center + 0.5) * invscale) for j in range(j0, j1)]
        total = math.fsum(w)
        rows.append((j0, [v / total for v in w]))
    taps = max(len(w) for _, w in rows)
    starts = torch.empty(out_size, dtype=torch.int32)
    weights = torch.zeros(out_size, taps, dtype=torch.float64)
    for i, (j0, w) in enumerate(rows):
        # Shift windows that would run past the end left, padding with zero weights in front,
        # so every tap index stays inside [0, in_size).
        start = min(j0, max(in_size - taps, 0))
        pad = j0 - start
        starts[i] = start
        weights[i, pad : pad + len(w)] = torch.tensor(w, dtype=torch.float64)
    return TapTable(in_size, out_size, taps, starts, weights.float())
