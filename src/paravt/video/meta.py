"""Stream metadata and the per-frame table, both read once when a video is opened."""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import torch

__all__ = ["FrameTable", "VideoMeta"]


@dataclass(frozen=True)
class VideoMeta:
    """What the decoder reports about a video stream (from a scan of its packets, not the header).

    ``begin``/``end`` are the stream's first pts and the end of its last frame, in seconds.
    ``duration = end - begin`` is the playable length; every time paravt shows a model or a user is
    on ``[0, duration]``, measured from the first frame.

    ``sample_aspect_ratio`` is the width of one stored pixel over its height (1.0 for square
    pixels; 4/3 for an anamorphic 320x240 shown 427x240). Frames are decoded and given to the
    model as stored (the reference's preprocessing ignores it too); pictures for people (contact
    sheets, the viewer) widen them by it.
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
    #: restart points (``video.bitstream``), and the keyframe flags that are not restart points
    num_keyframes: int = 0
    demoted_keyframes: int = 0
    sample_aspect_ratio: float = 1.0

    @property
    def display_size(self) -> tuple[int, int]:
        """(width, height) at which a player shows a frame: the stored width times the sample
        aspect ratio."""
        return round(self.width * self.sample_aspect_ratio), self.height


class FrameTable:
    """Presentation time, duration and keyframe flag of every frame, in presentation order.

    Built from torchcodec's demuxer scan (no decoding). It answers "which frame is shown at time
    t" and "where must a decode start to reach it" without touching the decoder, so requests from
    many calls can be mapped to frame indices and de-duplicated before anything is decoded.

    Its keyframes are restart points only (``restart``, from ``video.bitstream``): a container's
    keyframe flag that the bitstream does not back is kept out of ``keyframes`` and out of the
    frame mappings handed to torchcodec, so no decoder ever seeks to it.
    """

    def __init__(
        self,
        pts: torch.Tensor,
        durations: torch.Tensor,
        is_key: torch.Tensor,
        ticks: tuple[torch.Tensor, torch.Tensor] | None = None,
        restart: torch.Tensor | None = None,
        damaged: list[int] | None = None,
        reorder_delay: int = 0,
    ):
        # pts and durations in the stream's time base, when the scan exposes them: they let a new
        # decoder skip its own scan of the file (``frame_mappings``)
        self._ticks = ticks
        marked = is_key.to(torch.bool)
        # restart points (``video.bitstream``): the keyframes a decode may start from; the first
        # frame always counts, since every decode can start at the file's beginning
        self._restart = marked.clone() if restart is None else restart.to(torch.bool) & marked
        if len(self._restart):
            self._restart[int(marked.nonzero()[0]) if marked.any() else 0] = True
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
        #: frames a decode may start from (every seek lands on one of these)
        self.keyframes: list[int] = [int(i) for i in self._restart.nonzero().flatten().tolist()]
        #: frames the container marks as keyframes that are not restart points: a decode reaching
        #: past one starts at the restart point before it (``video.bitstream`` says why)
        self.demoted: list[int] = [
            int(i) for i in (marked & ~self._restart).nonzero().flatten().tolist()
        ]
        self._key_pts = [self.pts[i] for i in self.keyframes]
        #: frames whose packet is damaged (``video.bitstream``), and how many frames a decoder
        #: holds back for reordering: damage can show that far before a frame in display order
        self.damaged: list[int] = sorted(damaged or [])
        self.reorder_delay = int(reorder_delay)

    def __len__(self) -> int:
        return len(self.pts)

    def frame_mappings(self) -> str | None:
        """This table as torchcodec's ``custom_frame_mappings`` JSON (built once), or None; its
        keyframes are the restart points, so torchcodec seeks to nothing else.

        Why: a decoder in exact mode scans every packet of the file before its first frame — the
        scan this table already holds. Handing it over makes each extra decoder of a pool cost
        about half (0.06 s instead of 0.13 s on a 10-minute video; the scan grows with length).
        """
        if self._ticks is None:
            return None
        if self._mappings is None:
            pts, dur = (t.tolist() for t in self._ticks)
            key = self._restart.to(torch.int).tolist()
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

    def next_restart(self, index: int) -> int:
        """The first restart point after frame ``index`` (``len(self)`` if there is none)."""
        j = bisect.bisect_right(self.keyframes, index)
        return self.keyframes[j] if j < len(self.keyframes) else len(self.pts)

    def suspect_after(self, points: set[int]) -> set[int]:
        """Frames that may show damage at the frames ``points``: from ``reorder_delay`` frames
        before each point (B-frames shown earlier may reference it), never before its restart
        point, up to the next restart point, where decoding starts afresh."""
        out: set[int] = set()
        for p in points:
            first = max(self.keyframe_before(p), p - self.reorder_delay)
            out.update(range(first, self.next_restart(p)))
        return out
