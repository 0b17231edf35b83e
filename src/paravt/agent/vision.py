"""Frames → ``pixel_values`` + ``image_grid_thw`` for the model, in image layout.

Every frame (overview or tool window) enters the model as its own image — one grid row
``[1, h, w]`` each — because TRL's loss forward can only pass images, not video tensors, and
generation must see the same layout the loss sees. The fused ``paravt.kernels.pixel_values`` does
the resize + normalise + patchify when it is installed; otherwise the processor's image processor
does the same job (slower). Consecutive images with the same size and pixel budget go through in
one call; on the CPU those calls are split over ``preprocess_lanes(workers)`` threads (the engine
passes its crop workers), each image's rows the same as in one serial call.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from paravt.agent.chat import ChatCodec, ChatTemplateError
from paravt.schema.episodes import ImageItem
from paravt.video.nvdec import to_device

__all__ = ["at_budget", "budget_resizer", "preprocess"]


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


def _pieces(run: list, n: int) -> list[list]:
    """``run`` cut into ``min(n, len(run))`` contiguous pieces of near-equal length."""
    n = max(1, min(n, len(run)))
    size, extra = divmod(len(run), n)
    out, at = [], 0
    for j in range(n):
        step = size + (1 if j < extra else 0)
        out.append(run[at : at + step])
        at += step
    return out


def preprocess_lanes(workers: int) -> int:
    """Threads ``preprocess`` spreads CPU work over for ``workers``, counted like the crop
    decoder pool (0: one per CPU this process may run on, ``video.parallel.resolve_workers``)
    and divided by torch's intra-op threads: each kernel call already runs its resize on those,
    so with torch's default (one per core) this is 1, and with ``OMP_NUM_THREADS=1`` (the
    project's setting on CPU) it is one lane per worker."""
    import torch

    from paravt.video.parallel import resolve_workers  # paravt.video loads torch

    return max(1, resolve_workers(workers) // max(1, torch.get_num_threads()))


def _kernels_resize():
    try:
        from paravt.kernels import resize_cpu  # the kernels load torch
        from paravt.kernels.api import default_resize
        from paravt.kernels.spec import arch_spec, smart_resize
    except ImportError:
        return None
    return resize_cpu.resize, default_resize, arch_spec, smart_resize


class BudgetResize:
    """Resizes a batch of same-size decoded frames to their pixel budget (``budget_resizer``
    makes one; ``at_budget`` and the decode lanes apply it).

    Called with ``[n, 3, H, W]`` uint8 frames stacked channels-last (the layout torchcodec
    decodes a batch into, and the one ``preprocess`` stacks), it returns them at ``target``'s
    size in the kernels' CPU default arithmetic, so the later ``preprocess`` finds them at their
    size and writes the same rows, byte for byte. A batch already at that size, one the size rule
    refuses (``preprocess`` reports it later with its context) or one off the CPU comes back
    untouched.
    """

    def __init__(self, arch: str, min_pixels: int, max_pixels: int, kit: tuple):
        self._resize, self._default_resize, arch_spec, self._smart_resize = kit
        self.factor = arch_spec(arch).factor
        self.min_pixels, self.max_pixels = int(min_pixels), int(max_pixels)

    def target(self, height: int, width: int) -> tuple[int, int] | None:
        """The budget size of a ``height`` x ``width`` frame; ``None`` when it stays as it is."""
        try:
            h, w = self._smart_resize(height, width, self.factor, self.min_pixels, self.max_pixels)
        except ValueError:  # PixelInputError: preprocess reports it with its context
            return None
        return None if (h, w) == (height, width) else (h, w)

    def __call__(self, frames: Any) -> Any:
        if frames.device.type != "cpu" or frames.shape[0] == 0:
            return frames
        size = self.target(int(frames.shape[2]), int(frames.shape[3]))
        if size is None:
            return frames
        return self._resize(frames, size[0], size[1], self._default_resize(frames.device))


def budget_resizer(
    arch: str, min_pixels: int, max_pixels: int, device: Any = None
) -> BudgetResize | None:
    """The ``BudgetResize`` for this size rule and budget, or ``None`` where decoded frames must
    stay as they are: without the kernels (the processor fallback resizes in its own
    arithmetic) or when preprocessing runs on another device than the CPU (the Triton kernels
    resize from the decoded size). Why a callable: the decode lanes (``paravt.video.parallel``)
    apply it to frames as they are decoded, so full-size frames are never all held at once, and
    the video layer needs no size rule of its own."""
    import torch

    kit = _kernels_resize()
    if kit is None or (device is not None and torch.device(device).type != "cpu"):
        return None
    return BudgetResize(arch, min_pixels, max_pixels, kit)


def at_budget(
    parts: list[Any],
    arch: str,
    min_pixels: int,
    max_pixels: int,
    device: Any = None,
    workers: int = 1,
) -> list[Any]:
    """Decoded ``[3, H, W]`` uint8 frames resized to their pixel budget, as uint8.

    Why: a 720p frame is 2.76 MB and the model only ever sees it at the budget size (50,176 px
    is ~150 KB), yet the frames of every image of every episode stayed in the records until the
    training step ended. Resized here with the resize ``preprocess`` runs (``budget_resizer``:
    the kernels' ``resize_cpu.resize`` in the CPU default arithmetic, on frames stacked the same
    channels-last way), the later ``preprocess`` finds them at their size, skips its resize (the
    kernels return equal-size frames untouched) and gives the same rows, byte for byte.

    Frames stay as they are where that would not hold: without the kernels (the processor
    fallback resizes in its own arithmetic), when preprocessing runs on another device (the
    Triton kernels resize from the decoded size), or when the size rule refuses the frame (the
    later ``preprocess`` raises its typed error as before). Frames the decode lanes already
    brought to the budget (the engine passes ``budget_resizer`` down) pass through untouched.
    ``workers`` spreads the resize over ``preprocess_lanes(workers)`` threads like
    ``preprocess`` does.
    """
    import torch

    if not parts:
        return parts
    where = torch.device(device) if device is not None else parts[0].device
    to_budget = budget_resizer(arch, min_pixels, max_pixels, where)
    if to_budget is None:
        return parts
    out = list(parts)
    by_size: dict[tuple[int, int], list[int]] = {}
    for i, p in enumerate(parts):
        by_size.setdefault((int(p.shape[1]), int(p.shape[2])), []).append(i)
    lanes = preprocess_lanes(workers)
    for (H, W), idx in by_size.items():
        if to_budget.target(H, W) is None:
            continue

        def one(piece: list[int]) -> Any:
            stacked = torch.stack([parts[i].permute(1, 2, 0) for i in piece]).permute(0, 3, 1, 2)
            return to_budget(stacked)

        pieces = _pieces(idx, lanes)
        if len(pieces) > 1:
            with ThreadPoolExecutor(max_workers=len(pieces)) as pool:
                resized = list(pool.map(one, pieces))
        else:
            resized = [one(pieces[0])]
        for piece, frames in zip(pieces, resized, strict=True):
            for k, i in enumerate(piece):
                out[i] = frames[k]
    return out


def preprocess(
    items: list[ImageItem],
    codec: ChatCodec,
    dtype: Any = None,
    device: Any = None,
    workers: int = 1,
    resize: str | None = None,
) -> tuple[Any, Any]:
    """``(pixel_values, image_grid_thw)`` for ``items`` in order (``(None, None)`` when empty).

    ``dtype`` (default float32) is the model's, so no second copy is made to cast; ``device``
    (default: where the frames are, the CPU) moves the uint8 frames first — on a GPU the kernels
    run as Triton. The grid rows are checked against each item's ``grid_thw`` (the count the
    token stream was built with), so image-pad tokens always equal vision features.

    ``workers`` (1: serial; 0: one per core; the engine passes its crop workers): on the CPU,
    with the kernels, each run of same-size images is cut into contiguous pieces that run on
    ``preprocess_lanes(workers)`` threads (torch releases the GIL in the resize). Every image is
    its own grid row in image layout, so the pieces' rows, joined in order, are exactly the
    serial call's. The processor fallback and other devices stay serial. ``resize`` is the
    kernels' resize arithmetic (None: the device's default, ``uint8`` on the CPU).
    """
    import torch

    if not items:
        return None, None
    kernel = _kernels_pixel_values()
    where = torch.device(device) if device is not None else items[0].data.device
    lanes = preprocess_lanes(workers) if kernel is not None and where.type == "cpu" else 1

    def one(run: list[ImageItem]) -> tuple[Any, Any]:
        # stack as NHWC and view back as NCHW: decoded frames are channels-last in memory, and
        # the uint8 resize is ~2x faster on that layout than on an NCHW copy
        stacked = torch.stack([it.data.permute(1, 2, 0) for it in run]).permute(0, 3, 1, 2)
        if device is not None and where.type == "cuda":
            stacked = to_device(stacked, str(where))  # pinned, non-blocking: no stream sync
        elif device is not None:
            stacked = stacked.to(device)
        lo, hi = run[0].min_pixels, run[0].max_pixels
        if kernel is not None:
            return kernel(
                stacked,
                arch=codec.arch,
                min_pixels=lo,
                max_pixels=hi,
                layout="image",
                resize=resize,
                out_dtype=dtype or torch.float32,
            )
        out = codec.processor.image_processor(
            images=list(stacked),
            size={"shortest_edge": lo, "longest_edge": hi},
            return_tensors="pt",
        )
        return out["pixel_values"].to(stacked.device), out["image_grid_thw"]

    jobs = [piece for run in _runs(items) for piece in _pieces(run, lanes)]
    if lanes > 1 and len(jobs) > 1:
        with ThreadPoolExecutor(max_workers=min(lanes, len(jobs))) as pool:
            outs = list(pool.map(one, jobs))
    else:
        outs = [one(run) for run in jobs]
    pvs = [pv for pv, _ in outs]
    grids = [grid for _, grid in outs]
    pixel_values = torch.cat(pvs)
    grid_thw = torch.cat(grids).to(torch.long)
    _check_grids(items, grid_thw, codec.arch)
    if dtype is not None and pixel_values.dtype != dtype:  # the processor fallback is float32
        pixel_values = pixel_values.to(dtype)
    return pixel_values, grid_thw


def _check_grids(items: list[ImageItem], grid_thw: Any, arch: str) -> None:
    """The grid rows preprocessing gave against each item's ``grid_thw`` (the count the token
    stream was built with), so image-pad tokens always equal vision features. On a GPU every
    ``int()`` would wait for the stream: the rows are then the kernels' size rule, on the host."""
    expected = [it.grid_thw for it in items]
    if grid_thw.device.type == "cpu":
        got = [tuple(int(v) for v in row) for row in grid_thw]
    else:
        got = _host_grids(items, arch)
    if all(e is not None for e in expected) and got != expected:
        raise ChatTemplateError(
            f"image preprocessing gave grids {got[:3]}... but the token stream was built for "
            f"{expected[:3]}...; the pixel budget or resize rule disagrees"
        )


def _host_grids(items: list[ImageItem], arch: str) -> list[tuple[int, int, int]]:
    """Image-layout grid rows the kernels give these items, from their frames' sizes (shapes are
    host metadata) and ``paravt.kernels.smart_resize``: what ``pixel_values`` puts on the device,
    read without touching it."""
    from paravt.kernels import arch_spec, smart_resize

    spec = arch_spec(arch)
    out = []
    for it in items:
        _, H, W = it.data.shape
        h, w = smart_resize(H, W, spec.factor, it.min_pixels, it.max_pixels)
        out.append((1, h // spec.patch_size, w // spec.patch_size))
    return out
