"""Normalise and patchify resized uint8 frames straight into a preallocated ``pixel_values``.

The production torch path (CPU, and the CUDA ``"uint8"`` mode). Order of work, chosen by
measurement on CPU:

1. one strided *uint8* copy puts the pixels in patch order (a quarter of the bytes of doing the
   permutation on floats, as transformers does);
2. the uint8 -> float32 conversion writes straight into the output rows (temporal slot 0);
3. ``(x - 255*mean) / (255*std)`` runs in place there — the reference's float32 formula, so values
   match it bit for bit;
4. the image layout then copies slot 0 into the other temporal slots.

Fresh allocations are few on purpose: on CPU, first-touch page faults of a new 70 MB tensor cost
as much as the arithmetic. Frames may be NCHW-contiguous or channels-last (what torchcodec
decodes to and what torchvision's fast uint8 resize returns for it).
"""

from __future__ import annotations

from functools import lru_cache

import torch

from paravt.kernels.spec import ArchSpec

__all__ = ["rows_for"]


@lru_cache(maxsize=16)
def _constants(mean: tuple, std: tuple, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    m = torch.tensor(mean, dtype=torch.float32) * (1.0 / (1.0 / 255.0))
    s = torch.tensor(std, dtype=torch.float32) * (1.0 / (1.0 / 255.0))
    return m.to(device).view(1, 3, 1, 1), s.to(device).view(1, 3, 1, 1)


def rows_for(n_frames: int, h: int, w: int, spec: ArchSpec, layout: str) -> int:
    """Rows of ``pixel_values`` one window of ``n_frames`` (h x w after resize) occupies."""
    tp, p = spec.temporal_patch_size, spec.patch_size
    groups = n_frames if layout == "image" else -(-n_frames // tp)
    return groups * (h // p) * (w // p)


def patch_order(resized: torch.Tensor, spec: ArchSpec) -> torch.Tensor:
    """uint8 [n,3,h,w] -> a view [n, h/pm, w/pm, m, m, 3, p, p]: pixels in ``pixel_values`` order."""
    p, m = spec.patch_size, spec.merge_size
    n, c, h, w = resized.shape
    gh, gw = h // p, w // p
    if resized.is_contiguous():
        x = resized.view(n, c, gh // m, m, p, gw // m, m, p)
        return x.permute(0, 2, 5, 3, 6, 1, 4, 7)
    nhwc = resized.permute(0, 2, 3, 1)
    if not nhwc.is_contiguous():
        return patch_order(resized.contiguous(), spec)
    x = nhwc.view(n, gh // m, m, p, gw // m, m, p, c)
    return x.permute(0, 1, 4, 2, 5, 7, 3, 6)


def pack_window(resized: torch.Tensor, out: torch.Tensor, spec: ArchSpec, layout: str) -> None:
    """Write one window's uint8 [T,3,h,w] frames into ``out`` ([rows, patch_dim], float32)."""
    p, tp = spec.patch_size, spec.temporal_patch_size
    t = resized.shape[0]
    if layout == "video" and (pad := -t % tp):
        # Repeat the last frame; a uint8 index copy costs a quarter of a float one.
        idx = torch.cat([torch.arange(t), torch.full((pad,), t - 1)]).to(resized.device)
        resized = resized.index_select(0, idx)
    u8 = patch_order(resized, spec).contiguous()  # [n, bh, bw, m, m, 3, p, p]
    mean, std = _constants(spec.mean, spec.std, str(resized.device))
    if layout == "video":
        # Frames 2k and 2k+1 share a row: columns (C, tp, p, p) take channel-major order.
        g = u8.shape[0] // tp
        src = u8.view(g, tp, -1, 3, p * p).permute(0, 2, 3, 1, 4)  # [g, cells, 3, tp, pp]
        dst = out.view(g, -1, 3, tp, p * p)
        dst.copy_(src)
        flat = out.view(-1, 3, tp * p * p)
        flat.sub_(mean.view(1, 3, 1)).div_(std.view(1, 3, 1))
        return
    dst = out.view(-1, 3, tp, p * p)
    first = dst[:, :, 0]
    first.copy_(u8.view(-1, 3, p * p))
    first.sub_(mean.view(1, 3, 1)).div_(std.view(1, 3, 1))
    for slot in range(1, tp):
        dst[:, :, slot].copy_(first)
