"""``pixel_values``: decoded uint8 frames of one or more windows -> the model's vision input.

Dispatch: CUDA tensors with ``resize="float"`` go through the fused Triton kernels; everything
else through the torch path (``resize_cpu`` + ``pack``). Results are the layout transformers'
Qwen-VL processors produce (docs/PREPROCESSING.md §6), so they can be fed to the model as
``pixel_values`` / ``image_grid_thw`` (image layout) or ``pixel_values_videos`` /
``video_grid_thw`` (video layout).

Default resize arithmetic (``resize=None``):

* CUDA: ``"float"`` — the one-pass arithmetic of qwen-vl-utils' ``fetch_video`` (ParaVT's frames)
  and of torchvision on a GPU, i.e. what the released models saw for video; it is also the one
  the Triton kernel implements.
* CPU: ``"uint8"`` — torchvision's native two-pass uint8 kernel. It is ~3.5x faster than float
  interpolation on CPU (the only way to beat transformers' own CPU processor, which uses it too)
  and gives bit-for-bit what ``processor(...)`` gives on CPU.

The two differ by up to ~16 uint8 steps on ~2% of values at sharp edges; pass ``resize``
explicitly where CPU and GPU results must agree.
"""

from __future__ import annotations

import torch

from paravt.kernels import pack, resize_cpu
from paravt.kernels.spec import (
    LAYOUTS,
    RESIZE_MODES,
    PixelInputError,
    arch_spec,
    check_frame_size,
    smart_resize,
)
from paravt.video.config import WINDOW_MAX_PIXELS, WINDOW_MIN_PIXELS

__all__ = ["default_resize"]

_CHUNK_FRAMES = 16  # even, so video-layout temporal pairs never straddle two chunks


def _triton():
    """The Triton module, or None where triton is not installed (the torch path computes the same
    one-pass float arithmetic on the GPU via F.interpolate, only slower)."""
    try:
        from paravt.kernels import triton_resize
    except ImportError:
        return None
    return triton_resize


def default_resize(device: torch.device | str) -> str:
    """The resize arithmetic used when ``resize=None`` on ``device`` (see module docstring)."""
    return "float" if torch.device(device).type == "cuda" else "uint8"


def _as_windows(frames) -> list[torch.Tensor]:
    if isinstance(frames, torch.Tensor):
        windows = [frames]
    elif isinstance(frames, (list, tuple)):
        windows = list(frames)
    else:
        raise PixelInputError(
            f"frames must be a uint8 tensor [n,3,H,W] or a list of them, got {type(frames).__name__}"
        )
    if not windows:
        raise PixelInputError("frames is an empty list; pass at least one window of frames")
    for i, win in enumerate(windows):
        where = "frames" if isinstance(frames, torch.Tensor) else f"frames[{i}]"
        if not isinstance(win, torch.Tensor):
            raise PixelInputError(f"{where} is a {type(win).__name__}, expected a uint8 tensor")
        if win.dtype != torch.uint8:
            raise PixelInputError(
                f"{where} has dtype {win.dtype}; pass decoded uint8 RGB frames (0..255), "
                "e.g. frames.to(torch.uint8) if they hold integers"
            )
        if win.dim() != 4:
            raise PixelInputError(
                f"{where} has shape {tuple(win.shape)}; expected [n, 3, H, W] "
                "(use frame.unsqueeze(0) for a single frame)"
            )
        if win.shape[1] != 3:
            raise PixelInputError(
                f"{where} has {win.shape[1]} channels (shape {tuple(win.shape)}); expected RGB "
                "[n, 3, H, W] — convert grey/RGBA frames to RGB, or permute NHWC to NCHW"
            )
        if win.shape[0] == 0:
            raise PixelInputError(f"{where} holds no frames (shape {tuple(win.shape)})")
    devices = {w.device for w in windows}
    if len(devices) > 1:
        raise PixelInputError(f"all windows must be on one device, got {sorted(map(str, devices))}")
    return windows


def _grid_tensor(grids: list[list[int]], device: torch.device) -> torch.Tensor:
    """``grid_thw`` on ``device``. On CUDA the rows go through pinned memory with a non-blocking
    copy: ``torch.tensor(..., device="cuda")`` copies from pageable memory and then waits for the
    stream (a cudaStreamSynchronize per call, which also stalls the host behind any GPU work
    queued before the call)."""
    if device.type != "cuda":
        return torch.tensor(grids, dtype=torch.long, device=device)
    return torch.tensor(grids, dtype=torch.long).pin_memory().to(device, non_blocking=True)


def pixel_values(
    frames: torch.Tensor | list[torch.Tensor],
    arch: str = "qwen3-vl",
    min_pixels: int = WINDOW_MIN_PIXELS,
    max_pixels: int = WINDOW_MAX_PIXELS,
    layout: str = "image",
    resize: str | None = None,
    out_dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Resize, normalise and patchify frames into ``(pixel_values, grid_thw)``.

    ``frames``: one uint8 [n,3,H,W] tensor or a list of them (windows; each its own size).
    Image layout: one ``[1, gh, gw]`` grid row per frame; video layout: one ``[gt, gh, gw]`` row
    per window, odd frame counts padded by repeating the last frame. ``grid_thw`` is int64 on
    the frames' device; ``pixel_values`` is ``out_dtype`` there, shape [rows, 3*2*p*p].
    """
    spec = arch_spec(arch)
    if layout not in LAYOUTS:
        raise PixelInputError(f"layout={layout!r} is not one of {list(LAYOUTS)}")
    if resize is not None and resize not in RESIZE_MODES:
        raise PixelInputError(
            f"resize={resize!r} is not one of {list(RESIZE_MODES)} (or None for the device default)"
        )
    if not (isinstance(out_dtype, torch.dtype) and out_dtype.is_floating_point):
        raise PixelInputError(f"out_dtype={out_dtype!r} must be a floating torch dtype")
    windows = _as_windows(frames)
    device = windows[0].device
    mode = resize or default_resize(device)

    sizes, grids, total_rows = [], [], 0
    for i, win in enumerate(windows):
        H, W = win.shape[-2:]
        check_frame_size(H, W, spec, what="frames" if len(windows) == 1 else f"frames[{i}]")
        h, w = smart_resize(H, W, spec.factor, min_pixels, max_pixels)
        sizes.append((h, w))
        gh, gw = h // spec.patch_size, w // spec.patch_size
        n = win.shape[0]
        if layout == "image":
            grids.extend([[1, gh, gw]] * n)
        else:
            grids.append([-(-n // spec.temporal_patch_size), gh, gw])
        total_rows += pack.rows_for(n, h, w, spec, layout)

    grid_thw = _grid_tensor(grids, device)
    triton_resize = _triton() if device.type == "cuda" and mode == "float" else None
    if triton_resize is not None:
        out = torch.empty((total_rows, spec.patch_dim), dtype=out_dtype, device=device)
        triton_resize.pack_windows(windows, sizes, spec, layout, out)
        return out, grid_thw

    out = torch.empty((total_rows, spec.patch_dim), dtype=torch.float32, device=device)
    row = 0
    for win, (h, w) in zip(windows, sizes, strict=True):
        # Chunks of an even number of frames keep the resized frames cache-resident between the
        # resize and the pack, and keep temporal pairs together (only a window's last chunk can
        # be odd, and that is where the repeat-last padding belongs).
        for chunk in win.split(_CHUNK_FRAMES):
            rows = pack.rows_for(chunk.shape[0], h, w, spec, layout)
            resized = resize_cpu.resize(chunk, h, w, mode)
            pack.pack_window(resized, out[row : row + rows], spec, layout)
            row += rows
    return (out if out_dtype == torch.float32 else out.to(out_dtype)), grid_thw
