"""Subtitles for Video-MME's with-subtitles split: ``.srt`` parsing and frame-aligned selection.

Video-MME's protocol gives the model the subtitle lines that were on screen at the sampled
frames, not the whole transcript (which would leak far more than the frames show and overflow
the context on hour-long videos). The sampled times are only known once the overview is planned,
so selection takes the frame times as an argument: the runner asks the video engine for the
overview times of the same ``k`` before building the prompt (``frame_times_for``), selects the
cues covering them, and records whether they match the engine record's ``overview_times``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from paravt.errors import UserError

__all__: list[str] = []  # nothing here is for the other rooms

_TIME = re.compile(
    r"(\d+):(\d{1,2}):(\d{1,2})(?:[,.](\d{1,3}))?\s*-->\s*(\d+):(\d{1,2}):(\d{1,2})(?:[,.](\d{1,3}))?"
)
_TAG = re.compile(r"<[^>]+>|\{\\[^}]*\}")


@dataclass(frozen=True)
class Cue:
    start: float
    end: float
    text: str


def _seconds(h: str, m: str, s: str, ms: str | None) -> float:
    frac = int(ms.ljust(3, "0")) / 1000.0 if ms else 0.0
    return int(h) * 3600 + int(m) * 60 + int(s) + frac


def parse_srt(text: str) -> list[Cue]:
    """Cues of an SRT document (BOM, CRLF, missing indices and styling tags tolerated)."""
    cues: list[Cue] = []
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    for block in re.split(r"\n\s*\n", text):
        lines = [ln for ln in block.split("\n") if ln.strip()]
        for i, line in enumerate(lines):
            m = _TIME.search(line)
            if not m:
                continue
            g = m.groups()
            start, end = _seconds(*g[0:4]), _seconds(*g[4:8])
            body = " ".join(_TAG.sub("", ln).strip() for ln in lines[i + 1 :]).strip()
            if body:
                cues.append(Cue(start, max(start, end), body))
            break
    return cues


def read_srt(path: Path) -> list[Cue]:
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise UserError(f"subtitle file {path}: cannot read ({e.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return parse_srt(text)


def select_cues(cues: Sequence[Cue], times: Iterable[float]) -> list[Cue]:
    """Cues shown at any of ``times`` (start ≤ t ≤ end), each once, in subtitle order."""
    ts = sorted(float(t) for t in times)
    chosen = []
    for cue in cues:
        if any(cue.start <= t <= cue.end for t in ts):
            chosen.append(cue)
    return chosen


def subtitle_block(cues: Sequence[Cue]) -> str:
    """The text placed before the question: one line per cue, nothing when there are none."""
    if not cues:
        return ""
    lines = "\n".join(c.text for c in cues)
    return f"Subtitles spoken in the video (lines shown at the sampled frames):\n{lines}\n\n"


def frame_times_for(video: str | Path, k: int, mode: str = "exact") -> list[float]:
    """The overview times the episode engine will show for ``video`` with budget ``k``.

    The video engine's own plan (``VideoSource.overview_times``, no decoding), so the selected
    lines are exactly those on screen at the frames the model sees; the runner double-checks
    against the record's ``overview_times``.
    """
    from paravt.video import VideoSource  # paravt.video loads torch

    with VideoSource(str(video)) as src:
        return [float(t) for t in src.overview_times(k, mode=mode)]
