"""Frames → ``pixel_values`` + ``image_grid_thw`` for the model, in image layout.

Every frame (overview or tool window) enters the model as its own image — one grid row
``[1, h, w]`` each — because TRL's loss forward can only pass images, not video tensors, and
generation must see the same layout the loss sees. The fused ``paravt.kernels.pixel_values`` does
the resize + normalise + patchify when it is installed; otherwise the processor's image processor
does the same job (slower). Consecutive images with the same size and pixel budget go through in
one call.
"""

from __future__ import annotations

from typing import Any

from paravt.agent.chat import ChatCodec, ChatTemplateError
from paravt.agent.records import ImageItem


def _kernels_pixel_values():
    try:
        from paravt.kernels import pixel_values  # the kernels load torch
    except ImportError:
        return None
    return pixel_values


def _runs(items: list[ImageItem]) -> list[list[ImageItem]]:
    runs: list[list[ImageItem]] = []
    for it in items:
        key = (tuple(it.data.shape), it.min_pixels, it.max_pixels)
        if (
            runs
            and (tuple(runs[-1][0].data.shape), runs[-1][0].min_pixels, runs[-1][0].max_pixels)
            == key
        ):
            runs[-1].append(it)
        else:
            runs.append([it])
    return runs


def preprocess(
    items: list[ImageItem], codec: ChatCodec, dtype: Any = None, device: Any = None
) -> tuple[Any, Any]:
    """``(pixel_values, image_grid_thw)`` for ``items`` in order (``(None, None)`` when empty).

    ``dtype`` (default float32) is the model's, so no second copy is made to cast; ``device``
    (default: where the frames are, the CPU) moves the uint8 frames first — on a GPU the kernels
    run as Triton. The grid rows are checked against each item's ``grid_thw`` (the count the
    token stream was built with), so image-pad tokens always equal vision features.
    """
    import torch

    if not items:
        return None, None
    kernel = _kernels_pixel_values()
    pvs, grids = [], []
    for run in _runs(items):
        # stack as NHWC and view back as NCHW: decoded frames are channels-last in memory, and
        # the uint8 resize is ~2x faster on that layout than on an NCHW copy
        stacked = torch.stack([it.data.permute(1, 2, 0) for it in run]).permute(0, 3, 1, 2)
        if device is not None:
            stacked = stacked.to(device)
        lo, hi = run[0].min_pixels, run[0].max_pixels
        if kernel is not None:
            pv, grid = kernel(
                stacked,
                arch=codec.arch,
                min_pixels=lo,
                max_pixels=hi,
                layout="image",
                out_dtype=dtype or torch.float32,
            )
        else:
            out = codec.processor.image_processor(
                images=list(stacked),
                size={"shortest_edge": lo, "longest_edge": hi},
                return_tensors="pt",
            )
            pv, grid = out["pixel_values"].to(stacked.device), out["image_grid_thw"]
        pvs.append(pv)
        grids.append(grid)
    pixel_values = torch.cat(pvs)
    grid_thw = torch.cat(grids).to(torch.long)
    expected = [it.grid_thw for it in items]
    got = [tuple(int(v) for v in row) for row in grid_thw]
    if all(e is not None for e in expected) and got != expected:
        raise ChatTemplateError(
            f"image preprocessing gave grids {got[:3]}... but the token stream was built for "
            f"{expected[:3]}...; the pixel budget or resize rule disagrees"
        )
    if dtype is not None and pixel_values.dtype != dtype:  # the processor fallback is float32
        pixel_values = pixel_values.to(dtype)
    return pixel_values, grid_thw
