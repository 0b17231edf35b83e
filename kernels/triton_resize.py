# Triton's kernel language, not Python: ``tl.constexpr`` parameters take plain ints and bools at
# launch, and ``tl.static_range`` is unrolled by the compiler; triton's stubs type both as
# runtime Python, so these two rules misread this file's kernel and its launch
# pyright: reportArgumentType=false, reportGeneralTypeIssues=false
"""Triton kernel: AA-bicubic resize (one-pass float arithmetic) fused with normalise + patchify.

One launch per window, one pass over memory. Each program owns a tile of ``BLOCK`` output pixels
of one frame (``BLOCK_R`` rows x ``BLOCK_C`` columns) and all 3 channels of it, and computes the
separable filter of docs/PREPROCESSING.md §5.3 in registers:

* for each vertical tap ``tv`` (a compile-time constant count, ``VT``), the input row
  ``vstart[r] + tv`` is filtered horizontally at the tile's columns: a ``[BLOCK, HT_P2, 4]`` load
  of taps x channels (``HT`` taps, 3 channels padded to 4 and masked), contiguous in memory for
  channels-last frames (torchcodec's layout: one column's taps and channels are ``3*HT``
  neighbouring bytes), weighted by the column's horizontal weights and summed over the taps;
* the sum is accumulated with the row's vertical weight.

The horizontal weights of the tile's columns are loaded once per program (before the tap loop),
each vertical weight once. The float32 horizontal result never reaches memory: the price is that
an input row is filtered horizontally once per output row that reads it (about 4 times when
downscaling), arithmetic a GPU has to spare where the two-pass design paid a float32
intermediate written and read back (194 MB each way for the 5 x 16 720p tool batch).

The epilogue is the one the two-pass kernels had: clamp, round-half-even onto the uint8 grid
(the 1.5*2^23 trick, exact under IEEE round-to-nearest-even), ``(r - 255*mean) / (255*std)``
with ``div_rn`` (bit-identical to the torch formula), cast to the output dtype (float32 or
bf16, as the model wants) and the patch scatter of §6: twice in the image layout (the frame is
its own temporal pair), once in the video layout plus the copies that pad an odd window by
repeating its last frame.

Accumulation is float32, like ``F.interpolate`` on float input; the sum over horizontal taps is
a tree (``tl.sum``) where torch sums in order, so results match the reference to the rounding
step (≤1 uint8 step on a few values in 10^4; tests/kernels/test_kernels_triton_interpreter.py
checks it under ``TRITON_INTERPRET=1``).
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

# Output tile per program: BLOCK_R rows x BLOCK_C columns, all 3 channels. Not tuned on a GPU
# (none on the host this was written on); benchmarks/gpu_check.sh times it against the copy floor.
BLOCK_R = 2
BLOCK_C = 32


@triton.jit
def _fused_resize_pack(
    src_ptr,
    out_ptr,
    hstarts_ptr,
    hweights_ptr,
    vstarts_ptr,
    vweights_ptr,
    mean_ptr,
    std_ptr,
    h,
    w,
    n_frames,
    row_base,
    grid_h,
    grid_w,
    stride_n,
    stride_c,
    stride_h,
    stride_w,
    HT: tl.constexpr,
    HT_P2: tl.constexpr,
    VT: tl.constexpr,
    P: tl.constexpr,
    M: tl.constexpr,
    TP: tl.constexpr,
    IMAGE: tl.constexpr,
    BLOCK_R: tl.constexpr,
    BLOCK_C: tl.constexpr,
):
    frame = tl.program_id(0).to(tl.int64)
    idx = tl.arange(0, BLOCK_R * BLOCK_C)
    rows = tl.program_id(1) * BLOCK_R + idx // BLOCK_C
    cols = tl.program_id(2) * BLOCK_C + idx % BLOCK_C
    pmask = (rows < h) & (cols < w)
    taps = tl.arange(0, HT_P2)
    chans = tl.arange(0, 4)
    cmask = chans < 3

    # Horizontal taps of each column: start and weights (tap-major [HT, w]), loaded once.
    hstart = tl.load(hstarts_ptr + cols, mask=pmask, other=0)
    tmask = pmask[:, None] & (taps < HT)[None, :]
    hw = tl.load(hweights_ptr + taps[None, :] * w + cols[:, None], mask=tmask, other=0.0)
    col_off = (hstart[:, None] + taps[None, :]).to(tl.int64) * stride_w  # [BLOCK, HT_P2]
    tc_off = col_off[:, :, None] + chans[None, None, :].to(tl.int64) * stride_c
    tc_mask = tmask[:, :, None] & cmask[None, None, :]
    vstart = tl.load(vstarts_ptr + rows, mask=pmask, other=0)
    src = src_ptr + frame * stride_n

    acc = tl.zeros([BLOCK_R * BLOCK_C, 4], dtype=tl.float32)
    for tv in tl.static_range(VT):
        wv = tl.load(vweights_ptr + tv * h + rows, mask=pmask, other=0.0)  # tap-major [VT, h]
        row_off = (vstart + tv).to(tl.int64) * stride_h
        px = tl.load(src + row_off[:, None, None] + tc_off, mask=tc_mask, other=0)
        hsum = tl.sum(px.to(tl.float32) * hw[:, :, None], axis=1)  # [BLOCK, 4]
        acc += hsum * wv[:, None]

    r = tl.minimum(tl.maximum(acc, 0.0), 255.0)
    r = (r + 12582912.0) - 12582912.0  # round half to even onto the uint8 grid
    mean = tl.load(mean_ptr + chans, mask=cmask, other=0.0)
    std = tl.load(std_ptr + chans, mask=cmask, other=1.0)
    val = tl.math.div_rn(r - mean[None, :], std[None, :]).to(out_ptr.dtype.element_ty)

    # §6 scatter: rows walk 2x2 merge blocks in raster order, columns are (C, tp, p, p).
    py = rows // P
    px_ = cols // P
    row_in_group = ((py // M) * (grid_w // M) + (px_ // M)) * (M * M) + ((py % M) * M + (px_ % M))
    if IMAGE:
        group = frame
        tt = 0
    else:
        group = frame // TP
        tt = frame % TP
    out_row = row_base + group * grid_h * grid_w + row_in_group.to(tl.int64)
    pix = (rows % P) * P + (cols % P)
    patch_dim = 3 * TP * P * P
    base = out_ptr + (out_row * patch_dim + pix)[:, None]
    smask = pmask[:, None] & cmask[None, :]
    tl.store(base + ((chans * TP + tt) * (P * P))[None, :], val, mask=smask)
    # Extra temporal slots: all of them in the image layout; in the video layout, the slots after
    # the last frame of a window whose length is not a multiple of TP (repeat-last padding).
    last = frame == n_frames - 1
    for t2 in tl.static_range(1, TP):
        slot = base + ((chans * TP + t2) * (P * P))[None, :]
        if IMAGE:
            tl.store(slot, val, mask=smask)
        else:
            tl.store(slot, val, mask=smask & last & (tt < t2))


@lru_cache(maxsize=256)
def _device_table(in_size: int, out_size: int, device: torch.device):
    """Tap table already on ``device``: a host->device copy per call would cost more than the
    kernel itself for a tool batch (tables depend only on the sizes, so they are reused).

    Weights go tap-major (``[taps, out]``, the transpose of ``TapTable.weights``) so that one
    tap's weights for neighbouring output columns/rows are contiguous."""
    table = tap_table(in_size, out_size)
    weights = table.weights.t().contiguous()
    return _to(table.starts, device), _to(weights, device), table.taps


@lru_cache(maxsize=16)
def _device_constants(mean: tuple, std: tuple, device: torch.device):
    m255 = torch.tensor(mean, dtype=torch.float32) * (1.0 / (1.0 / 255.0))
    s255 = torch.tensor(std, dtype=torch.float32) * (1.0 / (1.0 / 255.0))
    return _to(m255, device), _to(s255, device)


def _to(host: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A host table onto ``device``: on CUDA through pinned memory without waiting (a pageable
    copy would synchronise the stream, even the first time a size is seen)."""
    if device.type != "cuda":
        return host.to(device)
    return host.pin_memory().to(device, non_blocking=True)


def pack_windows(
    windows: list[torch.Tensor],
    sizes: list[tuple[int, int]],
    spec: ArchSpec,
    layout: str,
    out: torch.Tensor,
) -> None:
    """Resize, normalise and patchify every window into ``out`` (rows already sized by caller).

    Host-side work is sizes and cached tables only: nothing here reads a device value, so the
    launches queue without a stream synchronisation."""
    device = out.device
    m255, s255 = _device_constants(spec.mean, spec.std, device)
    row_base = 0
    for frames, (h, w) in zip(windows, sizes, strict=True):
        n, _, H, W = frames.shape
        hs, hw_, htaps = _device_table(W, w, device)
        vs, vw, vtaps = _device_table(H, h, device)
        grid = (n, triton.cdiv(h, BLOCK_R), triton.cdiv(w, BLOCK_C))
        _fused_resize_pack[grid](
            frames,
            out,
            hs,
            hw_,
            vs,
            vw,
            m255,
            s255,
            h,
            w,
            n,
            row_base,
            h // spec.patch_size,
            w // spec.patch_size,
            *frames.stride(),
            HT=htaps,
            HT_P2=triton.next_power_of_2(htaps),
            VT=vtaps,
            P=spec.patch_size,
            M=spec.merge_size,
            TP=spec.temporal_patch_size,
            IMAGE=(layout == "image"),
            BLOCK_R=BLOCK_R,
            BLOCK_C=BLOCK_C,
        )
        row_base += rows_for(n, h, w, spec, layout)
