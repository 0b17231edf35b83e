"""Contact sheets: the frames a model saw, each with its timestamp written under it.

This is what a person opens when an answer surprises them: the exact frames (after sampling,
before resizing for the model) in a grid, labelled with the times the model was told.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

__all__ = ["contact_sheet", "frame_image", "load_font"]


def load_font(size: int):
    """Pillow's built-in font at ``size`` px (every sheet of paravt draws its text with it)."""
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has no sized default font
        return ImageFont.load_default()


def frame_image(frame: torch.Tensor, size: tuple[int, int] | None = None):
    """A uint8 ``[3, H, W]`` frame as a PIL image, resized to ``size`` (w, h) when given."""
    from PIL import Image

    img = Image.fromarray(frame.detach().to("cpu").permute(1, 2, 0).contiguous().numpy())
    if size is not None and img.size != tuple(size):
        img = img.resize((size[0], size[1]), Image.Resampling.BILINEAR)
    return img


def contact_sheet(
    groups: list[tuple[str, torch.Tensor, list[float]]],
    out_path: str | Path,
    title: str = "",
    thumb_width: int = 320,
    columns: int = 0,
    aspect: float = 1.0,
) -> Path:
    """Write a PNG grid of frames. ``groups`` = [(label prefix, uint8 [n,3,H,W], times)].

    Each frame is captioned ``"{prefix} {t:.1f} s"``; ``columns=0`` picks a near-square grid.
    ``aspect`` is the video's sample aspect ratio (``VideoMeta.sample_aspect_ratio``): frames
    are stored as decoded and drawn as a player shows them, widened by it.
    """
    from PIL import Image, ImageDraw

    cells = [
        (prefix, frames[j], t) for prefix, frames, times in groups for j, t in enumerate(times)
    ]
    if not cells:
        raise ValueError("contact sheet: no frames to draw")
    h, stored_w = int(cells[0][1].shape[1]), int(cells[0][1].shape[2])
    w = max(1, round(stored_w * (aspect if 0.1 <= aspect <= 10 else 1.0)))
    tw = max(16, min(thumb_width, w))
    th = max(1, round(h * tw / w))
    cols = columns if columns > 0 else max(1, math.ceil(math.sqrt(len(cells))))
    rows = math.ceil(len(cells) / cols)
    font_size = max(10, min(18, tw // 14))
    font = load_font(font_size)
    caption_h = font_size + 8
    title_h = (font_size + 12) if title else 0
    pad = 4
    sheet = Image.new(
        "RGB", (cols * (tw + pad) + pad, title_h + rows * (th + caption_h + pad) + pad), "white"
    )
    draw = ImageDraw.Draw(sheet)
    if title:
        draw.text((pad, 4), title, fill="black", font=font)
    for n, (prefix, frame, t) in enumerate(cells):
        r, c = divmod(n, cols)
        x = pad + c * (tw + pad)
        y = title_h + pad + r * (th + caption_h + pad)
        img = frame_image(frame, (tw, th))
        sheet.paste(img, (x, y))
        label = f"{prefix} {t:.1f} s".strip()
        draw.text((x + 2, y + th + 3), label, fill="black", font=font)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(out, format="PNG")
    return out
