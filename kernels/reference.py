"""The torch reference of docs/PREPROCESSING.md §8: the correctness oracle for every fast path.

Written for clarity, not speed: each step is one obvious torch expression, and the layout is
built with the view/permute that §6 describes. Two resize arithmetics exist in the Qwen-VL
ecosystem and both are modelled here:

* ``"float"`` (one pass): ``F.interpolate`` on float32 with the AA-bicubic filter, then clamp and
  round-half-even to uint8. This is qwen-vl-utils' ``fetch_video`` (what ParaVT's frames went
  through) and torchvision on a GPU.
* ``"uint8"`` (two passes): horizontal pass, clamp and round to uint8, then the vertical pass,
  clamp and round. This is Pillow and torchvision's native uint8 CPU kernel, i.e. what
  transformers' processors produce on CPU. Modelled in float32 with the §5.3 tap weights.

The two differ by up to ~16 uint8 steps on ~2% of values at sharp edges (§5.3).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from paravt.kernels.spec import ArchSpec, arch_spec, smart_resize
from paravt.kernels.weights import tap_table
from paravt.video.config import WINDOW_MAX_PIXELS, WINDOW_MIN_PIXELS

__all__: list[str] = []  # nothing here is for the other rooms

_CHUNK = 8  # frames per float32 interpolate call: bounds the float copy of 720p input


def _round_u8(x: torch.Tensor) -> torch.Tensor:
    """Clamp to 0..255 and round half to even, as torchvision's ``_cast_squeeze_out`` does."""
    return x.clamp_(0, 255).round_().to(torch.uint8)


def resize_one_pass(frames: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """uint8 [n,3,H,W] -> uint8 [n,3,h,w] through float32 AA-bicubic (qwen-vl-utils' arithmetic)."""
    out = [
        _round_u8(
            F.interpolate(
                chunk.float(), size=(h, w), mode="bicubic", align_corners=False, antialias=True
            )
        )
        for chunk in frames.split(_CHUNK)
    ]
    return torch.cat(out)


def resize_two_pass(frames: torch.Tensor, h: int, w: int) -> torch.Tensor:
    """uint8 [n,3,H,W] -> uint8 [n,3,h,w], horizontal then vertical with uint8 rounding between.

    A float model of Pillow's / torchvision-CPU's fixed-point scheme (§5.3): the clamp after the
    horizontal pass is what makes this differ from the one-pass result at sharp edges. It matches
    those implementations to 1 step on ~0.01-0.05% of values; very rarely 2, where a 1-step
    difference in the intermediate meets the filter's negative lobes. The production ``"uint8"``
    mode on CPU is torchvision's own kernel, not this model.
    """
    H, W = frames.shape[-2:]
    wh = tap_table(W, w).dense().to(frames.device)  # [w, W]
    wv = tap_table(H, h).dense().to(frames.device)  # [h, H]
    out = []
    for chunk in frames.split(_CHUNK):
        mid = _round_u8(torch.matmul(chunk.float(), wh.T))  # [c,3,H,w]
        out.append(_round_u8(torch.matmul(wv, mid.float())))  # [c,3,h,w]
    return torch.cat(out)


def normalize(resized: torch.Tensor, spec: ArchSpec) -> torch.Tensor:
    """uint8 -> float32 ``(x - 255*mean) / (255*std)``, the transformers fast-processor formula.

    The constants are formed the way transformers fuses rescale into normalize (float32 mean
    times 1/rescale), so a matching uint8 input gives bit-identical values.
    """
    m = torch.tensor(spec.mean, dtype=torch.float32) * (1.0 / (1.0 / 255.0))
    s = torch.tensor(spec.std, dtype=torch.float32) * (1.0 / (1.0 / 255.0))
    m = m.to(resized.device).view(3, 1, 1)
    s = s.to(resized.device).view(3, 1, 1)
    return (resized.to(torch.float32) - m) / s


def patchify_video(v: torch.Tensor, spec: ArchSpec) -> tuple[torch.Tensor, list[int]]:
    """float [T,3,h,w] of one window -> ([grid_t*gh*gw, patch_dim], [grid_t, gh, gw]) (§6)."""
    p, tp, m = spec.patch_size, spec.temporal_patch_size, spec.merge_size
    if pad := -v.shape[0] % tp:
        v = torch.cat([v, v[-1:].expand(pad, -1, -1, -1)])
    t, c, h, w = v.shape
    gt, gh, gw = t // tp, h // p, w // p
    x = v.reshape(gt, tp, c, gh // m, m, p, gw // m, m, p)
    x = x.permute(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gt * gh * gw, c * tp * p * p), [gt, gh, gw]


def patchify_image(v: torch.Tensor, spec: ArchSpec) -> tuple[torch.Tensor, list[list[int]]]:
    """float [n,3,h,w] -> ([n*gh*gw, patch_dim], n x [1, gh, gw]); each frame repeated tp times."""
    p, tp, m = spec.patch_size, spec.temporal_patch_size, spec.merge_size
    n, c, h, w = v.shape
    gh, gw = h // p, w // p
    x = v.reshape(n, c, gh // m, m, p, gw // m, m, p).permute(0, 2, 5, 3, 6, 1, 4, 7)
    x = x.unsqueeze(6).expand(-1, -1, -1, -1, -1, -1, tp, -1, -1)
    return x.reshape(n * gh * gw, c * tp * p * p), [[1, gh, gw]] * n


def resized_frames(
    frames: torch.Tensor, spec: ArchSpec, min_pixels: int, max_pixels: int, resize: str
) -> torch.Tensor:
    """The uint8 frames after the §5 resize, before normalisation (the thing tolerances speak of)."""
    h, w = smart_resize(frames.shape[-2], frames.shape[-1], spec.factor, min_pixels, max_pixels)
    if resize == "float":
        return resize_one_pass(frames, h, w)
    if resize == "uint8":
        return resize_two_pass(frames, h, w)
    raise ValueError(f"resize={resize!r}")


def reference_pixel_values(
    frames: torch.Tensor | list[torch.Tensor],
    arch: str = "qwen3-vl",
    min_pixels: int = WINDOW_MIN_PIXELS,
    max_pixels: int = WINDOW_MAX_PIXELS,
    layout: str = "image",
    resize: str = "float",
) -> tuple[torch.Tensor, torch.Tensor]:
    """(pixel_values float32, grid_thw int64) of §8 for one window or a list of windows."""
    spec = arch_spec(arch)
    windows = [frames] if isinstance(frames, torch.Tensor) else list(frames)
    rows, grids = [], []
    for win in windows:
        v = normalize(resized_frames(win, spec, min_pixels, max_pixels, resize), spec)
        if layout == "video":
            pv, grid = patchify_video(v, spec)
            grids.append(grid)
        else:
            pv, g = patchify_image(v, spec)
            grids.extend(g)
        rows.append(pv)
    return torch.cat(rows), torch.tensor(grids, dtype=torch.long)
