"""The geometry of one episode sheet, computed from an episode record and nothing else.

Everything is in pixels of the final picture. Time maps linearly onto the timeline
(``EpisodeLayout.x_of``), so an overview thumbnail is centred on its frame's time and a crop
window's bar spans exactly ``[x_of(start), x_of(end)]``. Overview thumbnails are staggered over a
few rows so that 64 frames of a one-hour video stay wide enough to see at 1600 px. Each turn gets
a band; its calls (run in parallel) are stacked in that band, one row each, with the frames the
window returned as a strip of thumbnails under the bar.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field
from typing import Any

from paravt.schema.episodes import CallRecord, EpisodeRecord
from paravt.schema.questions import LETTERS

__all__ = ["pixel_aspect"]

DEFAULT_WIDTH = 1600
MARGIN_LEFT = 96  # room for the turn labels
MARGIN_RIGHT = 48  # half an overview thumbnail: the last one stays centred on its time
FONT_SIZE = 15
SMALL_FONT_SIZE = 12
LINE_H = FONT_SIZE + 6
MIN_OVERVIEW_THUMB_W = 84
MAX_OVERVIEW_THUMB_W = 176
MAX_OVERVIEW_ROWS = 4
WINDOW_THUMB_W = 64
BAR_H = 12
GAP = 4  # pixels between two thumbnails of a row
THUMB_ASPECT = 9 / 16  # used when a record carries no pixels to measure
LABEL_CHARS = 120  # a failed call's label (window, kind, error) is cut here


@dataclass
class Thumb:
    """One thumbnail: its frame's time, its box, and which of ``EpisodeLayout.frames`` it shows
    (``None``: the record kept no pixels, a grey box stands in)."""

    time: float
    x: int
    y: int
    w: int
    h: int
    frame: int | None = None


@dataclass
class Bar:
    """One crop_video call. ``placed`` is False for a call with no readable window (drawn as a
    marker at the left edge); ``status`` is the record's ``ok``/``error``/``ignored``."""

    turn: int
    index: int
    start: float | None
    end: float | None
    x0: int
    x1: int
    y: int
    h: int
    status: str
    label: str
    placed: bool = True
    thumbs: list[Thumb] = field(default_factory=list)


@dataclass
class Band:
    """The rows of one turn: its label and vertical extent."""

    label: str
    y0: int
    y1: int


@dataclass
class EpisodeLayout:
    width: int
    height: int
    duration: float
    left: int
    right: int
    header: list[tuple[str, str]]  # (kind, text line): kind is title/question/option/answer/gold
    axis_y: int
    ticks: list[tuple[int, str]]
    overview: list[Thumb]
    overview_y: tuple[int, int]  # top and bottom of the overview strip
    bands: list[Band]
    bars: list[Bar]
    frames: list[Any] = field(default_factory=list, repr=False)  # uint8 [3, H, W] tensors

    def x_of(self, t: float) -> int:
        """The x pixel of time ``t`` (seconds) on the timeline."""
        return time_to_x(t, self.duration, self.left, self.right)


def time_to_x(t: float, duration: float, left: int, right: int) -> int:
    frac = min(max(float(t) / duration, 0.0), 1.0) if duration > 0 else 0.0
    return round(left + frac * (right - left))


def _tick_step(duration: float) -> float:
    """A round tick spacing giving 5 to 12 ticks over ``duration`` seconds."""
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200):
        if duration / step <= 12:
            return float(step)
    return float(math.ceil(duration / 12))


def _clock(t: float) -> str:
    t = round(t)
    h, rem = divmod(t, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _number(value: object) -> float | int | str:
    """``value`` if ``float`` may read it, else a ``TypeError`` (``None``, a list...)."""
    if isinstance(value, float | int | str):
        return value
    raise TypeError(f"not a number: {value!r}")


def _window_of(call: CallRecord) -> tuple[float | None, float | None]:
    """The call's window: the executed one, else the numbers it asked for (when numeric)."""
    if call.start is not None and call.end is not None:
        return float(call.start), float(call.end)
    args = call.arguments or {}
    try:
        s = float(_number(args.get("start_time", args.get("start"))))
        e = float(_number(args.get("end_time", args.get("end"))))
    except (TypeError, ValueError):
        return None, None
    if math.isfinite(s) and math.isfinite(e):
        return s, e
    return None, None


def _drawable(start: float, end: float, duration: float) -> bool:
    """A window a bar can show: it starts before it ends and overlaps the video (a reversed or
    empty window, or one wholly past the end, is a marker at the left edge instead)."""
    return start < end and (duration <= 0 or (start < duration and end > 0))


def _call_label(
    call: CallRecord, start: float | None, end: float | None, drawable: bool = True
) -> str:
    window = f"{start:.1f}-{end:.1f} s" if start is not None and end is not None else "no window"
    if start is not None and end is not None and not drawable:
        window = f"asked {window}, not a window of the video"
    if call.status == "ok":
        what = f"{call.n_frames} frames" if call.summary is None else "summary"
        return f"#{call.index} {window}  ok, {what}"
    if call.status == "ignored":
        return f"#{call.index} {window}  ignored (answering turn)"
    err = " ".join(str(call.error or "").split())
    text = f"#{call.index} {window}  FAILED {call.error_kind or ''}: {err}"
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 3] + "..."


def _answer_line(rec: EpisodeRecord) -> str:
    if rec.status != "ok":
        return f"error: {rec.error}"
    if rec.prediction is None:  # the final turn held nothing the reader could take
        return "answer: none could be read from the final turn"
    how = {"answer_tag": "answer tag", "extracted": "extracted", "forced": "forced"}.get(
        rec.answer_source or "", rec.answer_source or "?"
    )
    return f"answer: {rec.prediction!s}  ({how})"


def _header(rec: EpisodeRecord, chars: int) -> list[tuple[str, str]]:
    dur = float((rec.video_meta or {}).get("duration") or 0.0)
    title = f"{rec.id} - {rec.video} ({_clock(dur)}) - {rec.mode}/{rec.evidence} - K={rec.frames_k}"
    lines = [("title", title)]
    lines += [("question", s) for s in textwrap.wrap(f"Q: {rec.question}", chars)[:4]]
    for i, opt in enumerate(rec.options or []):
        lines += [("option", s) for s in textwrap.wrap(f"{LETTERS[i]}. {opt}", chars)[:1]]
    lines += [("answer", s) for s in textwrap.wrap(_answer_line(rec), chars)[:2]]
    if rec.gold is not None:
        lines.append(("gold", f"gold: {rec.gold}"))
    return lines


def _split_images(rec: EpisodeRecord) -> tuple[list[Any], list[Any]]:
    images = list(rec.stream.images)
    return (
        [im for im in images if im.source == "overview"],
        [im for im in images if im.source == "tool"],
    )


def pixel_aspect(video_meta: dict | None) -> float:
    """The width of one pixel over its height, as the video's metadata records it
    (``pixel_aspect_ratio``, or ``sample_aspect_ratio``: a number, ``"4/3"`` or ``"4:3"``);
    1.0 (square pixels) when it says nothing usable. An anamorphic DVD frame of 720x576 with
    64:45 pixels is shown 1024 wide."""
    meta = video_meta or {}
    raw = meta.get("pixel_aspect_ratio", meta.get("sample_aspect_ratio"))
    try:
        if isinstance(raw, str) and any(sep in raw for sep in ":/"):
            num, den = (float(x) for x in raw.replace(":", "/").split("/", 1))
            value = num / den
        else:
            value = float(_number(raw))
    except (TypeError, ValueError, ZeroDivisionError):
        return 1.0
    return value if math.isfinite(value) and 0.1 <= value <= 10 else 1.0


def _aspect(images: list[Any], par: float = 1.0) -> float:
    """Height over displayed width of the frames (``par``: the pixels' own aspect ratio)."""
    for im in images:
        shape = getattr(im.data, "shape", None)
        if shape is not None and len(shape) == 3 and shape[2] > 0:
            return float(shape[1]) / (float(shape[2]) * par)
    return THUMB_ASPECT


@dataclass
class _Canvas:
    """What every part of a sheet is placed against: the timeline, the thumbnails' aspect ratio,
    and the frames shown so far (thumbnails refer to them by position)."""

    width: int
    left: int
    right: int
    duration: float
    aspect: float
    frames: list[Any] = field(default_factory=list)

    def x(self, t: float) -> int:
        return time_to_x(t, self.duration, self.left, self.right)

    def add_frame(self, data: Any) -> int:
        self.frames.append(data)
        return len(self.frames) - 1


def place_in_row(centres: list[int], w: int, width: int, gap: int = GAP) -> list[int]:
    """Left edges of boxes ``w`` wide, each as near its centre as the others allow, none
    overlapping (``gap`` apart at least) and all inside ``[0, width]``; in the centres' order.
    The caller makes ``w`` small enough for all of them to fit."""
    lefts: list[int] = []
    for c in centres:  # left to right: push right past the previous box
        x = max(0, c - w // 2)
        if lefts:
            x = max(x, lefts[-1] + w + gap)
        lefts.append(x)
    limit = width - w
    for j in range(len(lefts) - 1, -1, -1):  # right to left: pull back inside the picture
        nxt = limit if j == len(lefts) - 1 else lefts[j + 1] - w - gap
        lefts[j] = min(lefts[j], nxt)
    return [max(0, x) for x in lefts]


def _overview_strip(cv: _Canvas, times: list[float], images: list[Any], top: int):
    """``(thumbnails, bottom)``: overview thumbnails centred on their times, staggered over up to
    ``MAX_OVERVIEW_ROWS`` rows so they stay wide enough to see; thumbnails too close in time are
    moved apart along their row, so no two ever overlap (frames bunched in time, hundreds of
    frames)."""
    spacing = (cv.right - cv.left) / max(1, len(times))
    rows = 1
    while rows < MAX_OVERVIEW_ROWS and spacing * rows - GAP < MIN_OVERVIEW_THUMB_W:
        rows += 1
    per_row = math.ceil(len(times) / rows) if times else 1
    fits = cv.width // per_row - GAP  # the widest box of which a full row fits the picture
    tw = int(max(8, min(MAX_OVERVIEW_THUMB_W, spacing * rows - GAP, fits)))
    th = max(8, round(tw * cv.aspect))
    by_time = {round(im.time, 3): im for im in images}
    lefts: dict[int, int] = {}
    for r in range(rows):
        mine = list(range(r, len(times), rows))
        placed = place_in_row([cv.x(times[i]) for i in mine], tw, cv.width)
        lefts.update(zip(mine, placed, strict=True))
    thumbs: list[Thumb] = []
    for i, t in enumerate(times):
        im = by_time.get(round(t, 3))
        frame = None if im is None else cv.add_frame(im.data)
        thumbs.append(Thumb(t, lefts[i], top + (i % rows) * (th + GAP), tw, th, frame))
    return thumbs, top + (rows * (th + GAP) if times else 0) + 6


def _ticks(cv: _Canvas) -> list[tuple[int, str]]:
    step = _tick_step(cv.duration)
    return [(cv.x(k * step), _clock(k * step)) for k in range(int(cv.duration // step) + 1)]


def _call_bar(cv: _Canvas, call: CallRecord, y: int) -> Bar:
    """The bar of one call on its row (a call without a readable window: a marker at the left)."""
    start, end = _window_of(call)
    placed = False
    x0, x1 = cv.left, cv.left + 10
    if start is not None and end is not None and _drawable(start, end, cv.duration):
        placed = True
        x0 = cv.x(start)
        x1 = max(x0 + 3, cv.x(end))
    label = _call_label(call, start, end, placed)
    return Bar(call.turn, call.index, start, end, x0, x1, y, BAR_H, call.status, label, placed)


def _window_strip(cv: _Canvas, bar: Bar, images: list[Any], top: int) -> int:
    """The frames one window returned, as thumbnails under its bar; returns their bottom."""
    # as wide as the timeline holds them all in one strip (32 frames no longer run off it)
    ww = max(8, min(WINDOW_THUMB_W, (cv.right - cv.left) // max(1, len(images)) - 2))
    wth = max(8, round(ww * cv.aspect))
    strip = len(images) * (ww + 2)
    sx = min(max(bar.x0, cv.left), max(cv.left, cv.right - strip))
    for j, im in enumerate(images):
        x = sx + j * (ww + 2)
        bar.thumbs.append(Thumb(float(im.time), x, top, ww, wth, cv.add_frame(im.data)))
    return top + wth + 4


def _turn_bands(cv: _Canvas, rec: Any, tool_imgs: list[Any], y: int):
    """``(bands, bars, bottom)``: one band per turn that wrote calls, its calls stacked in it,
    each ``ok`` call with the frames it returned (when the record's images line up with them)."""
    queue = list(tool_imgs) if rec.evidence == "frames" else []
    if len(queue) != sum(c.n_frames for c in rec.calls if c.status == "ok"):
        queue = []
    bands: list[Band] = []
    bars: list[Bar] = []
    for turn in sorted({c.turn for c in rec.calls}):
        band_top = y
        for call in [c for c in rec.calls if c.turn == turn]:
            bar = _call_bar(cv, call, y + LINE_H)
            row_bottom = bar.y + BAR_H + 4
            if call.status == "ok" and queue:
                mine, queue = queue[: call.n_frames], queue[call.n_frames :]
                row_bottom = _window_strip(cv, bar, mine, row_bottom)
            bars.append(bar)
            y = row_bottom + 4
        bands.append(Band(f"turn {turn}", band_top, y))
        y += 8
    return bands, bars, y


def build_layout(rec: Any, width: int = DEFAULT_WIDTH) -> EpisodeLayout:
    """The sheet's geometry for an ``EpisodeRecord`` (``keep_images`` records carry thumbnails)."""
    overview_imgs, tool_imgs = _split_images(rec)
    times = [float(t) for t in (rec.overview_times or [])]
    duration = float((rec.video_meta or {}).get("duration") or 0.0)
    if duration <= 0:  # no recorded length: the axis reaches the last time the record names
        ends = times + [e for c in rec.calls for e in _window_of(c) if e is not None]
        duration = max([*ends, 1e-6])
    cv = _Canvas(
        width,
        MARGIN_LEFT,
        width - MARGIN_RIGHT,
        duration,  # the video's own length: a window asked past its end is cut at the edge
        _aspect(overview_imgs + tool_imgs, pixel_aspect(rec.video_meta)),
    )
    chars = max(40, int((width - 2 * MARGIN_RIGHT) / (FONT_SIZE * 0.55)))
    header = _header(rec, chars)
    overview_top = 10 + LINE_H * len(header) + 10
    overview, overview_bottom = _overview_strip(cv, times, overview_imgs, overview_top)
    axis_y = overview_bottom + 4
    bands, bars, bottom = _turn_bands(cv, rec, tool_imgs, axis_y + LINE_H + 8)
    return EpisodeLayout(
        width,
        bottom + 10,
        cv.duration,
        cv.left,
        cv.right,
        header,
        axis_y,
        _ticks(cv),
        overview,
        (overview_top, overview_bottom),
        bands,
        bars,
        cv.frames,
    )
