"""Paint an ``EpisodeLayout`` with Pillow: the picture of where an episode looked.

Colours carry the call status (green: executed, red with a cross: failed, grey: ignored); the
header repeats the question, the options, the answer with how it was read, and the gold answer.
Writing checks the destination first (``check_writable``) so the CLI can refuse a bad path
before a model is loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paravt.destinations import check_file_destination
from paravt.errors import UserError
from paravt.video.sheet import frame_image, load_font
from paravt.viz.layout import (
    DEFAULT_WIDTH,
    FONT_SIZE,
    LINE_H,
    SMALL_FONT_SIZE,
    EpisodeLayout,
    build_layout,
)

__all__ = ["check_writable", "write_episode_sheet"]

STATUS_COLOURS = {"ok": (46, 139, 87), "error": (205, 45, 45), "ignored": (150, 150, 150)}
HEADER_COLOURS = {
    "title": (0, 0, 0),
    "question": (20, 20, 20),
    "option": (70, 70, 70),
    "answer": (25, 80, 170),
    "gold": (150, 95, 0),
}
BAND_SHADES = ((246, 246, 250), (238, 242, 238))


def check_writable(path: str | Path) -> Path:
    """``path`` as a PNG destination that can be written, or a ``UserError`` saying why not
    (``paravt.destinations``: a file is made and removed where the sheet will go)."""
    out = Path(path)
    if out.is_dir():
        raise UserError(
            f"--sheet {out} is a folder; give a file name such as {out / 'episode.png'}"
        )
    if out.suffix.lower() != ".png":
        raise UserError(f"--sheet {out}: the episode sheet is a PNG; name the file *.png")
    return check_file_destination(out, "--sheet ")


def render(layout: EpisodeLayout):
    """The sheet as a PIL image."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (layout.width, layout.height), "white")
    draw = ImageDraw.Draw(img)
    font, small = load_font(FONT_SIZE), load_font(SMALL_FONT_SIZE)

    for n, (kind, text) in enumerate(layout.header):
        draw.text((10, 10 + n * LINE_H), text, fill=HEADER_COLOURS.get(kind, (0, 0, 0)), font=font)

    def paste(thumb) -> None:
        box = (thumb.x, thumb.y, thumb.x + thumb.w, thumb.y + thumb.h)
        if thumb.frame is None:
            draw.rectangle(box, fill=(215, 215, 215))
        else:
            img.paste(frame_image(layout.frames[thumb.frame], (thumb.w, thumb.h)), box[:2])
        draw.rectangle(box, outline=(90, 90, 90))

    top = layout.overview_y[0]
    for thumb in layout.overview:  # a tick from each thumbnail down to its time on the axis
        cx = layout.x_of(thumb.time)
        draw.line((cx, thumb.y + thumb.h, cx, layout.axis_y), fill=(170, 170, 170))
    for thumb in layout.overview:
        paste(thumb)
    draw.text((10, top), "overview", fill=(0, 0, 0), font=small)

    draw.line((layout.left, layout.axis_y, layout.right, layout.axis_y), fill=(0, 0, 0), width=2)
    for x, label in layout.ticks:
        draw.line((x, layout.axis_y - 4, x, layout.axis_y + 4), fill=(0, 0, 0))
        draw.text((x + 2, layout.axis_y + 5), label, fill=(60, 60, 60), font=small)
    draw.text((10, layout.axis_y - 6), "time", fill=(0, 0, 0), font=small)

    for n, band in enumerate(layout.bands):
        draw.rectangle((0, band.y0, layout.width, band.y1), fill=BAND_SHADES[n % 2])
        draw.text((10, band.y0 + 4), band.label, fill=(0, 0, 0), font=font)
        for x, _ in layout.ticks:  # faint time grid through the band
            draw.line((x, band.y0, x, band.y1), fill=(222, 222, 222))

    for bar in layout.bars:
        colour = STATUS_COLOURS.get(bar.status, (0, 0, 0))
        box = (bar.x0, bar.y, bar.x1, bar.y + bar.h)
        if bar.status == "error":
            draw.rectangle(box, outline=colour, width=2)
            draw.line(box, fill=colour, width=2)
            draw.line((bar.x0, bar.y + bar.h, bar.x1, bar.y), fill=colour, width=2)
        else:
            draw.rectangle(box, fill=colour)
        text_x = bar.x0 if bar.placed else bar.x1 + 6
        label_w = draw.textlength(bar.label, font=small)
        text_x = int(min(text_x, layout.width - 8 - label_w))
        draw.text(
            (max(text_x, layout.left), bar.y - LINE_H + 4), bar.label, fill=colour, font=small
        )
        for thumb in bar.thumbs:
            paste(thumb)
    return img


def write_episode_sheet(rec: Any, out: str | Path, width: int = DEFAULT_WIDTH) -> Path:
    """Lay out and paint one episode record as a PNG at ``out``; returns the path."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    render(build_layout(rec, width)).save(path, format="PNG", optimize=True)
    return path
