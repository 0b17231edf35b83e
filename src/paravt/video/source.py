"""``VideoSource``: one open video, its metadata read once, frames decoded on demand.

Times in and out are on the video's own timeline: seconds since the first frame, on
``[0, meta.duration]``. Requests are mapped to frame indices through the frame table (the frame
shown at a time is the one whose ``[pts, pts + duration)`` covers it), de-duplicated and sorted
before decoding, and every returned time is the pts of the frame actually decoded. Only the
requested frames are ever decoded into memory.
"""

from __future__ import annotations

from pathlib import Path

import torch

from paravt.video import ffmpeg_log
from paravt.video.config import OVERVIEW_MODES, OverviewMode
from paravt.video.decode import DecodeOutcome, FrameResize
from paravt.video.decoders import SourceDecoders
from paravt.video.errors import VideoDecodeError
from paravt.video.frames import Frames
from paravt.video.meta import FrameTable, VideoMeta
from paravt.video.opening import check_file, normalise_path, scan_frames
from paravt.video.parallel import decode_parallel
from paravt.video.sampling import qwen_overview_indices, uniform_times

__all__ = ["VideoSource"]


class VideoSource:
    """An opened video. Keep it for the life of an episode or a tool batch; ``close()`` frees it.

    ``device="cuda"`` decodes with torchcodec's GPU decoder (frames come back on the GPU).
    ``num_threads`` is FFmpeg's thread count per decoder; 1 suits several decoders in parallel.
    ``skip_disposable`` decodes H.264 and HEVC on the CPU without the non-reference pictures
    between the frames asked for (``paravt.video.disposable``; same pixels, less work).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        device: str = "cpu",
        num_threads: int = 1,
        skip_disposable: bool = True,
    ):
        self.path = normalise_path(path)
        self.device = str(device)
        self.num_threads = int(num_threads)
        self.skip_disposable = bool(skip_disposable)
        check_file(self.path)
        table, header = scan_frames(self.path)
        self.table: FrameTable = table
        begin, end = self.table.begin, self.table.end
        self.meta = VideoMeta(
            path=self.path,
            duration=float(end - begin),
            average_fps=float(len(self.table) / (end - begin))
            if end > begin
            else float(header.average_fps_from_header or 0.0),
            num_frames=len(self.table),
            width=int(header.width or 0),
            height=int(header.height or 0),
            begin=float(begin),
            end=float(end),
            rotation=None if header.rotation is None else float(header.rotation),
            codec=header.codec,
            num_keyframes=len(self.table.keyframes),
            demoted_keyframes=len(self.table.demoted),
            sample_aspect_ratio=_aspect(header),
        )
        #: the decoding seam for batch callers (``paravt.video.parallel``, ``paravt.tools.batch``):
        #: the own decoder (built on first need), more for parallel lanes, the filtered-packet path
        self.decoders = SourceDecoders(
            self.path,
            self.table,
            device=self.device,
            num_threads=self.num_threads,
            skip_disposable=self.skip_disposable,
            codec=self.meta.codec,
            rotation=self.meta.rotation,
        )
        self.open_warnings: list[str] = []
        declared = header.duration_seconds_from_header
        if declared and declared - self.meta.duration > max(1.0, 0.05 * declared):
            self.open_warnings.append(
                f"the header says {declared:.2f} s but frames cover only {self.meta.duration:.2f} s "
                "(truncated file?); the shorter, real duration is used"
            )

    # -- lifecycle --------------------------------------------------------------------------
    def close(self) -> None:
        self.decoders.close()

    def __enter__(self) -> VideoSource:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- time <-> index ---------------------------------------------------------------------
    def index_at(self, t: float) -> int:
        """Index of the frame shown at time ``t`` (seconds since the first frame, clamped)."""
        t = min(max(float(t), 0.0), self.meta.duration)
        return self.table.index_at(self.meta.begin + t)

    def time_of(self, index: int) -> float:
        return self.table.pts[index] - self.meta.begin

    # -- planning ---------------------------------------------------------------------------
    def overview_plan(
        self, k: int, mode: OverviewMode = "exact"
    ) -> tuple[list[tuple[float, int]], list[str]]:
        """[(requested time, frame index)] for a ``k``-frame overview, plus warnings."""
        if mode not in OVERVIEW_MODES:
            raise ValueError(f"overview mode {mode!r} is not one of {list(OVERVIEW_MODES)}")
        k = int(k)
        if k <= 0:
            raise ValueError(f"overview needs k >= 1 frames, got {k}")
        warnings: list[str] = []
        if mode == "qwen-vl-utils":
            # qwen-vl-utils samples from the frame count of an exact-mode decoder, which can differ
            # from the packet scan's (one frame more on a Matroska file here)
            counted = self.decoders.counted_frames()
            idx, warnings = qwen_overview_indices(counted, k)
            if counted != len(self.table):
                warnings.append(f"decoder counts {counted} frames, packet scan {len(self.table)}")
            idx = [min(i, len(self.table) - 1) for i in idx]
            return [(self.time_of(i), i) for i in idx], warnings
        times = uniform_times(0.0, self.meta.duration, k)
        plan = [(t, self.index_at(t)) for t in times]
        if mode == "keyframe":
            half = self.meta.duration / (2 * k)
            exact = {i for _, i in plan}
            used: set[int] = set()
            snapped = 0
            out = []
            for t, i in plan:
                kf = self.table.nearest_keyframe(self.meta.begin + t)
                free = kf not in used and (kf == i or kf not in exact)
                if free and abs(self.time_of(kf) - t) <= half:
                    used.add(kf)
                    out.append((t, kf))
                    snapped += 1
                else:
                    out.append((t, i))
            if snapped < len(plan):
                warnings.append(
                    f"keyframe mode: {snapped} of {len(plan)} frames are keyframes; "
                    "the rest were decoded exactly (no keyframe within half a slice)"
                )
            plan = out
        return plan, warnings

    def overview_times(self, k: int, mode: OverviewMode = "exact") -> list[float]:
        """Times (pts of the frames that will be decoded) of a ``k``-frame overview, no decoding."""
        plan, _ = self.overview_plan(k, mode)
        return sorted({self.time_of(i) for _, i in plan})

    # -- decoding ---------------------------------------------------------------------------
    def overview(
        self,
        k: int,
        mode: OverviewMode = "exact",
        workers: int = 1,
        resize: FrameResize | None = None,
    ) -> Frames:
        """``k`` frames over the whole video: time-uniform (``exact``), snapped to keyframes where
        one is near (``keyframe``, one decode per frame), or qwen-vl-utils' index-uniform choice.

        ``workers > 1`` decodes GOP-aligned parts of the plan on that many decoders at once.
        ``resize`` brings each frame to the caller's size right after it is decoded, so only
        frames at that size are held (``paravt.video.parallel.decode_parallel``).
        """
        plan, warnings = self.overview_plan(k, mode)
        needed = sorted({i for _, i in plan})
        if workers > 1:
            outcome = decode_parallel(
                {self.path: self}, {self.path: needed}, workers, resize
            ).outcomes[self.path]
        else:
            outcome = self.decoders.decode(needed, resize=resize)
        frames = self.assemble(plan, outcome)
        frames.warnings[:0] = warnings
        return frames

    def frames_at(self, times: list[float], resize: FrameResize | None = None) -> Frames:
        """The frames shown at ``times`` (seconds since the first frame; clamped into the video),
        each resized by ``resize`` right after it is decoded when one is given."""
        warnings = []
        clamped = [min(max(float(t), 0.0), self.meta.duration) for t in times]
        if any(abs(a - float(b)) > 0 for a, b in zip(clamped, times, strict=True)):
            warnings.append(f"times clamped to [0, {self.meta.duration:.3f}] s")
        plan = [(t, self.index_at(t)) for t in clamped]
        needed = sorted({i for _, i in plan})
        frames = self.assemble(plan, self.decoders.decode(needed, resize=resize))
        frames.warnings[:0] = warnings
        return frames

    def assemble(self, plan: list[tuple[float, int]], outcome: DecodeOutcome) -> Frames:
        """Frames in time order from a plan (``[(requested time, frame index)]``, as
        ``overview_plan`` gives) and a decode outcome that holds its indices (from
        ``decoders.decode`` or ``paravt.video.parallel.decode_parallel``); raises
        ``VideoDecodeError`` only if nothing decoded.

        Warnings are about this plan only, so a batch decodes the union of many plans once and
        assembles each from the one outcome (``paravt.tools.batch``).
        """
        by_pts: dict[float, tuple[int, torch.Tensor, float]] = {}
        failed: list[float] = []
        reasons: list[str] = []
        moved = 0
        for t, i in plan:
            if i in outcome.frames:
                data, pts = outcome.frames[i]
                key = round(pts - self.meta.begin, 9)
                if key not in by_pts:
                    by_pts[key] = (i, data, pts - self.meta.begin)
                    moved += abs(pts - self.table.pts[i]) > 1e-6
            elif i in outcome.failed:
                failed.append(float(t))
                reasons.append(outcome.failed[i])
        suspect = self._suspect(outcome)
        damaged = sorted(float(v[2]) for v in by_pts.values() if v[0] in suspect)
        if not by_pts and failed:
            raise VideoDecodeError(
                f"no frame of {self.path} could be decoded at the {len(failed)} requested times "
                f"({reasons[0]}); the file is corrupt in that region",
                self.path,
            )
        warnings: list[str] = []
        distinct = len(by_pts) + len({i for _, i in plan if i in outcome.failed})
        if distinct < len(plan):
            warnings.append(
                f"{len(plan)} frames requested but only {distinct} distinct frames cover those times"
            )
        if failed:
            warnings.append(
                "frames at "
                + ", ".join(f"{t:.2f}s" for t in failed)
                + f" could not be decoded ({reasons[0]})"
            )
        if moved:
            warnings.append(
                f"{moved} frames came back with another time than planned after a decoding "
                "problem; their true times are reported"
            )
        if damaged:
            warnings.append(
                _damage_warning(damaged, outcome.damaged, [v[0] for v in by_pts.values()])
            )
        times = sorted(by_pts)
        return Frames(
            parts=[by_pts[t][1] for t in times],
            times=[float(by_pts[t][2]) for t in times],
            failed=failed,
            warnings=warnings,
            indices=[by_pts[t][0] for t in times],
            damaged=damaged,
            empty_size=(self.meta.height, self.meta.width),
        )

    def _suspect(self, outcome: DecodeOutcome) -> set[int]:
        """Frames of this outcome that may show damage: near a damaged packet of the file, a
        frame the decoder failed, or one it returned with another time (it lost a picture), up
        to the next restart point (``FrameTable.suspect_after``); and those a straight decode
        returned after FFmpeg logged an error (``DecodeOutcome.damaged``)."""
        damaged = set(outcome.damaged)  # already spread to the next restart point
        points = set(self.table.damaged) | set(outcome.failed)
        points |= {
            i for i, (_, pts) in outcome.frames.items() if abs(pts - self.table.pts[i]) > 1e-6
        }
        return (self.table.suspect_after(points) if points else set()) | damaged


def _damage_warning(damaged: list[float], lines: dict[int, str], indices: list[int]) -> str:
    """The warning for frames decoded after damage (``damaged``: their times in seconds),
    quoting FFmpeg's first error line (``lines``: by frame index) among the frames handed out
    (``indices``) where a decode logged one."""
    said = [lines[i] for i in indices if i in lines]
    quote = f" (FFmpeg: {ffmpeg_log.plain(said[0])})" if said else ""
    return (
        f"{len(damaged)} frames ({damaged[0]:.2f}s to {damaged[-1]:.2f}s) were decoded after "
        f"damage in the file and may show decoding errors{quote}"
    )


def _aspect(header) -> float:
    """The stream's sample aspect ratio (1.0 where the header gives none or an unusable one)."""
    ratio = getattr(header, "pixel_aspect_ratio", None)
    try:
        value = float(ratio) if ratio else 1.0
    except (TypeError, ValueError, ZeroDivisionError):
        return 1.0
    return value if 0.1 <= value <= 10 else 1.0
