"""Normalise and patchify resized uint8 frames straight into a preallocated ``pixel_values``.

The production torch path (CPU, and the CUDA ``"uint8"`` mode) writes each value once: the
subtraction reads the uint8 frames through a strided view in patch order and writes float32 into
the output rows, and the division runs in place. No float copy of the frames in frame order and no
separate patchify copy is made (transformers makes both). Arithmetic is the reference's
``(x - 255*mean) / (255*std)`` in float32, so values match it bit for bit.
"""

from __future__ import annotations

from functools import lru_cache

import torch

from paravt.kernels.spec import ArchSpec


@lru_cache(maxsize=16)
def _constants(mean: tuple, std: tuple, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    m = torch.tensor(mean, dtype=torch.float32) * (1.0 / (1.0 / 255.0))
    s = torch.tensor(std, dtype=torch.float32) * (1.0 / (1.0 / 255.0))
    return m.to(device), s.to(device)


def rows_for(n_frames: int, h: int, w: int, spec: ArchSpec, layout: str) -> int:
    """Rows of ``pixel_values`` one window of ``n_frames`` (h x w after resize) occupies."""
    tp, p = spec.temporal_patch_size, spec.patch_size
    groups = n_frames if layout == "image" else -(-n_frames // tp)
    return groups * (h // p) * (w // p)


def pack_window(resized: torch.Tensor, out: torch.Tensor, spec: ArchSpec, layout: str) -> None:
    """Write one window's uint8 [T,3,h,w] frames into ``out`` ([rows, patch_dim], float32)."""
    p, tp, m = spec.patch_size, spec.temporal_patch_size, spec.merge_size
    t, c, h, w = resized.shape
    gh, gw = h // p, w // p
    mean, std = _constants(spec.mean, spec.std, str(resized.device))
    mean = mean.view(1, 1, 1, 1, 1, 3, 1, 1, 1)
    std = std.view(1, 1, 1, 1, 1, 3, 1, 1, 1)
    if layout == "image":
        src = resized.view(t, c, gh // m, m, p, gw // m, m, p).permute(0, 2, 5, 3, 6, 1, 4, 7)
        src = src.unsqueeze(6).expand(-1, -1, -1, -1, -1, -1, tp, -1, -1)
        groups = t
    else:
        if pad := -t % tp:
            # Repeat the last frame; a uint8 index copy costs a quarter of a float one.
            idx = torch.cat([torch.arange(t), torch.full((pad,), t - 1)]).to(resized.device)
            resized = resized.index_select(0, idx)
        groups = resized.shape[0] // tp
        src = resized.view(groups, tp, c, gh // m, m, p, gw // m, m, p)
        src = src.permute(0, 3, 6, 4, 7, 2, 1, 5, 8)
    dst = out.view(groups, gh // m, gw // m, m, m, c, tp, p, p)
    torch.sub(src, mean, out=dst)
    dst.div_(std)
