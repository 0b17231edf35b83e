"""Triton kernels: AA-bicubic resize (one-pass float arithmetic) fused with normalise + patchify.

Two launches per window, following the separable filter of docs/PREPROCESSING.md §5.3:

1. ``_horizontal_pass``: uint8 frames [T*3, H, W] -> float32 [T*3, H, w]. Each output column
   reads ``taps`` inputs starting at a precomputed index with precomputed weights (``weights.py``).
2. ``_vertical_pass_pack``: float32 [T*3, H, w] -> the rows of ``pixel_values``. The vertical taps,
   clamp, round-half-even to the uint8 grid, ``(r - 255*mean) / (255*std)`` and the patch scatter
   of §6 happen in registers; each normalised value is written straight to its final position(s):
   twice in the image layout (the frame is its own temporal pair), once in the video layout, plus
   the copies that pad an odd window by repeating its last frame.

The float32 intermediate is the one round trip through memory a separable filter needs; nothing
else (no resized uint8 frames, no float frames in frame order, no patchify copy) is materialised.
Accumulation is float32, like ``F.interpolate`` on float input, so results match the reference to
the rounding step (§5.3: ≤1 uint8 step on a few pixels in 10^4).

Round half to even uses the 1.5*2^23 trick (exact for |x| < 2^22 under IEEE round-to-nearest-even)
and the division uses ``div_rn``, so normalisation is bit-identical to the torch formula. Both work
in the interpreter (``TRITON_INTERPRET=1``) too, which is how CPU-only CI checks these kernels.
"""

from __future__ import annotations

from functools import lru_cache

import torch
import triton
import triton.language as tl

from paravt.kernels.pack import rows_for
from paravt.kernels.spec import ArchSpec
from paravt.kernels.weights import tap_table

__all__: list[str] = []  # nothing here is for the other rooms

# Tile of output rows x columns per program. Measured on an H200 (benchmarks/results/gpu/
# profile_pixel_values.json, 5x16 720p frames -> 168x280, kernels only): 4x64 took 1.0 ms, 8x64
# 1.4 ms, 16x64 2.4 ms, 32x64 4.2 ms, all bit-identical: the horizontal gather pass (90% of the
# GPU time) runs faster with fewer rows per program.
BLOCK_R = 4
BLOCK_C = 64


@triton.jit
def _horizontal_pass(
    src_ptr,
    tmp_ptr,
    starts_ptr,
    weights_ptr,
    H,
    W,
    w_out,
    taps,
    stride_n,
    stride_c,
    stride_h,
    stride_w,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    plane = tl.program_id(0).to(tl.int64)
    frame = plane // 3
    ch = plane % 3
    rows = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(2) * BLOCK_C + tl.arange(0, BLOCK_C)
    rmask = rows < H
    cmask = cols < w_out
    mask = rmask[:, None] & cmask[None, :]
    start = tl.load(starts_ptr + cols, mask=cmask, other=0)
    # Strided source: NCHW-contiguous and channels-last (torchcodec's layout) both read in place.
    src = src_ptr + frame * stride_n + ch * stride_c + rows[:, None].to(tl.int64) * stride_h
    acc = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float32)
    for t in range(taps):
        # Weights are stored tap-major ([taps, w_out]): one tap of 32 neighbouring columns is one
        # 128-byte line, not 32 lines `taps` floats apart.
        wt = tl.load(weights_ptr + t * w_out + cols, mask=cmask, other=0.0)
        px = tl.load(src + (start + t)[None, :].to(tl.int64) * stride_w, mask=mask, other=0)
        acc += px.to(tl.float32) * wt[None, :]
    dst = tmp_ptr + plane * H * w_out + rows[:, None].to(tl.int64) * w_out + cols[None, :]
    tl.store(dst, acc, mask=mask)


@triton.jit
def _vertical_pass_pack(
    tmp_ptr,
    out_ptr,
    starts_ptr,
    weights_ptr,
    mean_ptr,
    std_ptr,
    H,
    h,
    w,
    taps,
    n_frames,
    row_base,
    grid_h,
    grid_w,
    P: tl.constexpr,
    M: tl.constexpr,
    TP: tl.constexpr,
    IMAGE: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    plane = tl.program_id(0)
    frame = plane // 3
    ch = plane % 3
    rows = tl.program_id(1) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(2) * BLOCK_C + tl.arange(0, BLOCK_C)
    rmask = rows < h
    cmask = cols < w
    mask = rmask[:, None] & cmask[None, :]

    start = tl.load(starts_ptr + rows, mask=rmask, other=0)
    src = tmp_ptr + plane.to(tl.int64) * H * w + cols[None, :]
    acc = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float32)
    for t in range(taps):
        wt = tl.load(weights_ptr + t * h + rows, mask=rmask, other=0.0)  # tap-major [taps, h]
        v = tl.load(src + (start + t)[:, None].to(tl.int64) * w, mask=mask, other=0.0)
        acc += v * wt[:, None]

    r = tl.minimum(tl.maximum(acc, 0.0), 255.0)
    r = (r + 12582912.0) - 12582912.0  # round half to even onto the uint8 grid
    mean = tl.load(mean_ptr + ch)
    std = tl.load(std_ptr + ch)
    val = tl.math.div_rn(r - mean, std).to(out_ptr.dtype.element_ty)

    # §6 scatter: rows walk 2x2 merge blocks in raster order, columns are (C, tp, p, p).
    py = rows // P
    px = cols // P
    row_in_group = ((py // M)[:, None] * (grid_w // M) + (px // M)[None, :]) * (M * M) + (
        (py % M)[:, None] * M + (px % M)[None, :]
    )
    if IMAGE:
        group = frame
        tt = 0
    else:
        group = frame // TP
        tt = frame % TP
    out_row = row_base + group.to(tl.int64) * grid_h * grid_w + row_in_group
    pix = (rows % P)[:, None] * P + (cols % P)[None, :]
    patch_dim = 3 * TP * P * P
    base = out_ptr + out_row * patch_dim + pix
    tl.store(base + (ch * TP + tt) * (P * P), val, mask=mask)
    # Extra temporal slots: all of them in the image layout; in the video layout, the slots after
    # the last frame of a window whose length is not a multiple of TP (repeat-last padding).
    last = frame == n_frames - 1
    for t2 in tl.static_range(1, TP):
        if IMAGE:
            tl.store(base + (ch * TP + t2) * (P * P), val, mask=mask)
        else:
            tl.store(base + (ch * TP + t2) * (P * P), val, mask=mask & last & (tt < t2))


@lru_cache(maxsize=256)
def _device_table(in_size: int, out_size: int, device: torch.device):
    """Tap table already on ``device``: a host->device copy per call would cost more than the
    kernels themselves for a tool batch (tables depend only on the sizes, so they are reused).

    Weights go tap-major (``[taps, out]``, the transpose of ``TapTable.weights``) so that the
    kernels' per-tap weight loads are contiguous across output columns/rows."""
    table = tap_table(in_size, out_size)
    weights = table.weights.t().contiguous()
    return table.starts.to(device), weights.to(device), table.taps


@lru_cache(maxsize=16)
def _device_constants(mean: tuple, std: tuple, device: torch.device):
    m255 = torch.tensor(mean, dtype=torch.float32) * (1.0 / (1.0 / 255.0))
    s255 = torch.tensor(std, dtype=torch.float32) * (1.0 / (1.0 / 255.0))
    return m255.to(device), s255.to(device)


def pack_windows(
    windows: list[torch.Tensor],
    sizes: list[tuple[int, int]],
    spec: ArchSpec,
    layout: str,
    out: torch.Tensor,
) -> None:
    """Resize, normalise and patchify every window into ``out`` (rows already sized by caller)."""
    device = out.device
    m255, s255 = _device_constants(spec.mean, spec.std, device)
    row_base = 0
    for frames, (h, w) in zip(windows, sizes, strict=True):
        n, _, H, W = frames.shape
        hs, hw_, htaps = _device_table(W, w, device)
        vs, vw, vtaps = _device_table(H, h, device)
        tmp = torch.empty((n * 3, H, w), dtype=torch.float32, device=device)
        grid1 = (n * 3, triton.cdiv(H, BLOCK_R), triton.cdiv(w, BLOCK_C))
        _horizontal_pass[grid1](
            frames,
            tmp,
            hs,
            hw_,
            H,
            W,
            w,
            htaps,
            *frames.stride(),
            BLOCK_R=BLOCK_R,
            BLOCK_C=BLOCK_C,
        )
        grid2 = (n * 3, triton.cdiv(h, BLOCK_R), triton.cdiv(w, BLOCK_C))
        _vertical_pass_pack[grid2](
            tmp,
            out,
            vs,
            vw,
            m255,
            s255,
            H,
            h,
            w,
            vtaps,
            n,
            row_base,
            h // spec.patch_size,
            w // spec.patch_size,
            P=spec.patch_size,
            M=spec.merge_size,
            TP=spec.temporal_patch_size,
            IMAGE=(layout == "image"),
            BLOCK_R=BLOCK_R,
            BLOCK_C=BLOCK_C,
        )
        row_base += rows_for(n, h, w, spec, layout)
