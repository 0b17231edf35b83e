"""Stream metadata and the per-frame table, both read once when a video is opened."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class VideoMeta:
    """What the decoder reports about a video stream (from a scan of its packets, not the header).

    ``begin``/``end`` are the stream's first pts and the end of its last frame, in seconds.
    ``duration = end - begin`` is the playable length; every time paravt shows a model or a user is
    on ``[0, duration]``, measured from the first frame.
    """

    path: str
    duration: float
    average_fps: float
    num_frames: int
    width: int
    height: int
    begin: float
    end: float
    rotation: float | None
    codec: str | None
    num_keyframes: int = 0


class FrameTable:
    """Presentation time, duration and keyframe flag of every frame, in presentation order.

    Built from torchcodec's demuxer scan (no decoding). It answers "which frame is shown at time
    t" and "where is the nearest keyframe" without touching the decoder, so requests from many
    calls can be mapped to frame indices and de-duplicated before anything is decoded.
    """

    def __init__(
        self,
        pts: torch.Tensor,
        durations: torch.Tensor,
        is_key: torch.Tensor,
        ticks: tuple[torch.Tensor, torch.Tensor] | None = None,
    ):
        # pts and durations in the stream's time base, when the scan exposes them: they let a new
        # decoder skip its own scan of the file (``frame_mappings``)
        self._ticks = ticks
        self._is_key = is_key
        self._mappings: str | None = None
        self.pts: list[float] = [float(x) for x in pts.tolist()]
        self.durations: list[float] = [float(x) for x in durations.tolist()]
        ends = (pts + durations).tolist()
        # running maximum of frame ends: the first frame whose end is after t is shown at t
        run, acc = [], float("-inf")
        for e in ends:
            acc = max(acc, float(e))
            run.append(acc)
        self._end_so_far = run
        self.keyframes: list[int] = [int(i) for i in is_key.nonzero().flatten().tolist()]
        self._key_pts = [self.pts[i] for i in self.keyframes]

    def __len__(self) -> int:
        return len(self.pts)

    def frame_mappings(self) -> str | None:
        """This table as torchcodec's ``custom_frame_mappings`` JSON (built once), or None.

        Why: a decoder in exact mode scans every packet of the file before its first frame — the
        scan this table already holds. Handing it over makes each extra decoder of a pool cost
        about half (0.06 s instead of 0.13 s on a 10-minute video; the scan grows with length).
        """
        if self._ticks is None:
            return None
        if self._mappings is None:
            pts, dur = (t.tolist() for t in self._ticks)
            key = self._is_key.to(torch.int).tolist()
            frames = ",".join(
                f'{{"pts":{int(p)},"duration":{int(d)},"key_frame":{k}}}'
                for p, d, k in zip(pts, dur, key, strict=True)
            )
            self._mappings = '{"frames":[' + frames + "]}"
        return self._mappings

    @property
    def begin(self) -> float:
        return self.pts[0]

    @property
    def end(self) -> float:
        return self._end_so_far[-1]

    def index_at(self, pts: float) -> int:
        """Index of the frame displayed at absolute time ``pts`` (clamped to the first/last frame)."""
        i = bisect.bisect_right(self._end_so_far, pts)
        return min(max(i, 0), len(self.pts) - 1)

    def frame_interval(self) -> float:
        """Mean display time of one frame (1 / average fps)."""
        return (self.end - self.begin) / max(len(self.pts), 1)

    def nearest_keyframe(self, pts: float) -> int:
        """Index (into the frame table) of the keyframe whose pts is nearest to ``pts``."""
        j = bisect.bisect_left(self._key_pts, pts)
        best = None
        for c in (j - 1, j):
            if 0 <= c < len(self.keyframes) and (
                best is None or abs(self._key_pts[c] - pts) < abs(self._key_pts[best] - pts)
            ):
                best = c
        return self.keyframes[best if best is not None else 0]

    def keyframe_before(self, index: int) -> int:
        """The last keyframe at or before frame ``index`` (where a decoder must start to reach it)."""
        j = bisect.bisect_right(self.keyframes, index) - 1
        return self.keyframes[j] if j >= 0 else 0
