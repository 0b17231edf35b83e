"""Execute many crop_video calls at once: each video opened once, each frame decoded once.

Steps: parse every call's arguments (no video needed); open each distinct video once; turn each
window into frame indices (docs/PROTOCOL.md §3 sampling); take the union of indices per video,
sorted; split it into GOP-aligned lanes and decode them on a bounded pool of threads
(``paravt.video.parallel``), at most ``workers`` decoders per video; then hand each call its frames in call order. Calls asking
for the same window share one set of frames. A failing call (bad arguments, unreadable video,
corrupt frames) gets its own error and never affects its siblings.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from paravt.tools.arguments import clamp_window, read_window
from paravt.tools.results import BatchResult, BatchStats, CropConfig, ToolResult, WindowRequest
from paravt.video.decode import DecodeOutcome, FrameResize
from paravt.video.errors import InvalidWindowError, VideoError
from paravt.video.frames import Frames
from paravt.video.nvdec import cpu_fallback_line, decode_workers, is_cuda
from paravt.video.parallel import decode_parallel
from paravt.video.sampling import uniform_times, window_frame_count
from paravt.video.source import VideoSource

__all__ = ["execute_windows", "window_plan"]

logger = logging.getLogger(__name__)


def _error(
    req: WindowRequest, kind: str, message: str, start=None, end=None, warnings=None
) -> ToolResult:
    return ToolResult(
        ok=False,
        clip=None,
        times=[],
        start=start,
        end=end,
        error=message,
        error_kind=kind,
        warnings=list(warnings or []),
        key=req.key,
        video=req.video,
    )


def window_plan(
    source: VideoSource, start: float, end: float, config: CropConfig
) -> list[tuple[float, int]]:
    """[(time, frame index)] for one clamped window: time-uniform slice centres."""
    n = window_frame_count(end - start, config.fps, config.min_frames, config.max_frames)
    return [(t, source.index_at(t)) for t in uniform_times(start, end, n)]


@dataclass
class PlannedWindow:
    """One call whose window is known: its (time, frame index) plan, the clamped window and the
    warnings so far (argument and clamping notes)."""

    plan: list[tuple[float, int]]
    start: float
    end: float
    warnings: list[str]


@dataclass
class OpenVideos:
    """The batch's videos: the open sources by path, the videos that failed to open (their
    error), and how many decoders each source had already used before this batch."""

    sources: dict[str, VideoSource] = field(default_factory=dict)
    errors: dict[str, VideoError | Exception] = field(default_factory=dict)
    decoders_before: dict[str, int] = field(default_factory=dict)


def execute_windows(
    requests: list[WindowRequest],
    config: CropConfig | None = None,
    sources: dict[str, VideoSource] | None = None,
    resize: FrameResize | None = None,
) -> BatchResult:
    """Run every call of a batch; results in call order (see module docstring).

    ``sources`` may hold already-open ``VideoSource``s by path (e.g. from the overview), which are
    reused and not counted as opens. ``resize`` brings each frame to the caller's size right
    after it is decoded (the engine's pixel budget), so the results hold only frames at that size.
    """
    config = config or CropConfig()
    t0 = time.perf_counter()
    # on a CUDA device the lanes are the NVDEC pool's (paravt.video.nvdec), not one per core
    stats = BatchStats(calls=len(requests), workers=decode_workers(config.device, config.workers))
    results: list[ToolResult | None] = [None] * len(requests)
    given = dict(sources or {})
    windows = _read_arguments(requests, results)
    videos = _open_videos(requests, windows, given, config, stats)
    planned = _plan_windows(requests, windows, videos, config, results)
    outcomes = _decode_union(requests, planned, videos.sources, stats, resize)
    _hand_out(requests, planned, videos.sources, outcomes, results)
    if is_cuda(config.device):
        stats.cpu_fallbacks = _report_cpu_fallback(requests, videos.sources, results)
    _close_and_count(videos, given, results, stats)
    stats.seconds = time.perf_counter() - t0
    return BatchResult(results=[r for r in results if r is not None], stats=stats)


def _read_arguments(
    requests: list[WindowRequest], results: list[ToolResult | None]
) -> dict[int, tuple[float, float, list[str]]]:
    """Step 1: each call's (start, end, warnings), before touching any file; a bad call gets its
    error in ``results``."""
    windows: dict[int, tuple[float, float, list[str]]] = {}
    for n, req in enumerate(requests):
        try:
            windows[n] = read_window(req.arguments)
        except InvalidWindowError as e:
            results[n] = _error(req, e.kind, str(e))
    return windows


def _open_videos(
    requests: list[WindowRequest],
    windows: dict[int, tuple[float, float, list[str]]],
    given: dict[str, VideoSource],
    config: CropConfig,
    stats: BatchStats,
) -> OpenVideos:
    """Step 2: each distinct video of a well-formed call opened once (or taken from ``given``)."""
    videos = OpenVideos()
    for n in windows:
        video = requests[n].video
        if video in videos.sources or video in videos.errors:
            continue
        if video in given:
            videos.sources[video] = given[video]
            stats.opens[video] = 0
        else:
            stats.opens[video] = 1
            try:
                videos.sources[video] = VideoSource(
                    video,
                    device=config.device,
                    num_threads=config.decoder_threads,
                    skip_disposable=config.skip_disposable,
                )
            except VideoError as e:
                videos.errors[video] = e
                continue
            except Exception as e:  # pragma: no cover - unexpected decoder failure
                logger.exception("internal error opening %s for crop_video", video)
                videos.errors[video] = e
                continue
        # a decoder the source already had (a source passed in) counts as used by this batch
        decoders = videos.sources[video].decoders
        videos.decoders_before[video] = decoders.created - (decoders.built() is not None)
    return videos


def _plan_windows(
    requests: list[WindowRequest],
    windows: dict[int, tuple[float, float, list[str]]],
    videos: OpenVideos,
    config: CropConfig,
    results: list[ToolResult | None],
) -> dict[int, PlannedWindow]:
    """Step 3: each window clamped into its video and turned into frame indices; a call whose
    video did not open or whose window is empty gets its error in ``results``."""
    planned: dict[int, PlannedWindow] = {}
    for n, (start, end, warns) in windows.items():
        req = requests[n]
        if req.video in videos.errors:
            results[n] = _open_error(req, videos.errors[req.video], warns)
            continue
        src = videos.sources[req.video]
        try:
            s, e, clamp_warns = clamp_window(
                start, end, src.meta.duration, src.table.frame_interval()
            )
        except InvalidWindowError as err:
            results[n] = _error(req, err.kind, str(err), warnings=warns)
            continue
        planned[n] = PlannedWindow(window_plan(src, s, e, config), s, e, warns + clamp_warns)
    return planned


def _open_error(req: WindowRequest, err: VideoError | Exception, warnings: list[str]) -> ToolResult:
    kind = getattr(err, "kind", "internal")
    text = str(err) if isinstance(err, VideoError) else f"internal error opening {req.video}: {err}"
    return _error(req, kind, f"crop_video: {text}", warnings=warnings)


def _decode_union(
    requests: list[WindowRequest],
    planned: dict[int, PlannedWindow],
    sources: dict[str, VideoSource],
    stats: BatchStats,
    resize: FrameResize | None = None,
) -> dict[str, DecodeOutcome]:
    """Step 4: the union of frames per video, sorted, decoded once in GOP-aligned lanes (each
    frame resized by ``resize`` as it is decoded)."""
    needed: dict[str, set[int]] = {}
    for n, window in planned.items():
        needed.setdefault(requests[n].video, set()).update(i for _, i in window.plan)
    needed_sorted = {v: sorted(ix) for v, ix in needed.items()}
    stats.distinct_frames = sum(len(ix) for ix in needed_sorted.values())
    decoded = decode_parallel(
        {v: sources[v] for v in needed_sorted}, needed_sorted, stats.workers, resize
    )
    outcomes = decoded.outcomes
    stats.lanes = len(decoded.lanes)
    stats.lane_gop_frames = [lane.cost for lane in decoded.lanes]
    stats.gop_frames = sum(stats.lane_gop_frames)
    stats.frames_decoded = sum(len(o.frames) for o in outcomes.values())
    stats.frames_failed = sum(len(o.failed) for o in outcomes.values())
    stats.pictures_skipped = sum(o.pictures_skipped for o in outcomes.values())
    return outcomes


def _hand_out(
    requests: list[WindowRequest],
    planned: dict[int, PlannedWindow],
    sources: dict[str, VideoSource],
    outcomes: dict[str, DecodeOutcome],
    results: list[ToolResult | None],
) -> None:
    """Step 5: each call's frames, in call order; identical windows share one tensor."""
    shared: dict[tuple[str, tuple[int, ...]], Frames] = {}
    for n, window in planned.items():
        req = requests[n]
        key = (req.video, tuple(i for _, i in window.plan))
        try:
            frames = shared.get(key)
            if frames is None:
                frames = sources[req.video].assemble(window.plan, outcomes[req.video])
                shared[key] = frames
        except VideoError as err:
            results[n] = _error(
                req, err.kind, f"crop_video: {err}", window.start, window.end, window.warnings
            )
            continue
        results[n] = ToolResult(
            ok=True,
            clip=frames,
            times=list(frames.times),
            start=window.start,
            end=window.end,
            warnings=window.warnings + list(frames.warnings),
            failed=list(frames.failed),
            damaged=list(frames.damaged),
            key=req.key,
            video=req.video,
        )


def _report_cpu_fallback(
    requests: list[WindowRequest],
    sources: dict[str, VideoSource],
    results: list[ToolResult | None],
) -> int:
    """On a CUDA device: torchcodec decodes a stream NVDEC cannot take on the CPU by itself;
    its public ``cpu_fallback`` status is read here and said in every call's warnings on that
    file (the episode record's call warnings), so the fallback is counted (the videos that fell
    back, returned for ``BatchStats.cpu_fallbacks``), never silent."""
    lines: dict[str, str | None] = {}
    for video, src in sources.items():
        decoder = src.decoders.built()
        lines[video] = cpu_fallback_line(decoder, video) if decoder is not None else None
    for n, res in enumerate(results):
        line = lines.get(requests[n].video)
        if res is not None and line is not None:
            res.warnings.append(line)
    return sum(line is not None for line in lines.values())


def _close_and_count(
    videos: OpenVideos,
    given: dict[str, VideoSource],
    results: list[ToolResult | None],
    stats: BatchStats,
) -> None:
    """Step 6: decoders used per video, the sources this batch opened closed, totals counted."""
    for video, src in videos.sources.items():
        stats.decoders[video] = src.decoders.created - videos.decoders_before.get(video, 0)
        if video not in given:
            src.close()
    stats.calls_ok = sum(1 for r in results if r is not None and r.ok)
    stats.frames_returned = sum(len(r.times) for r in results if r is not None and r.ok)
