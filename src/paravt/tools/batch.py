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
from typing import Any

from paravt.tools.arguments import clamp_window, read_window
from paravt.tools.results import BatchResult, BatchStats, CropConfig, ToolResult, WindowRequest
from paravt.video.errors import InvalidWindowError, VideoError
from paravt.video.parallel import decode_parallel, resolve_workers
from paravt.video.sampling import uniform_times, window_frame_count
from paravt.video.source import VideoSource

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


def execute_windows(
    requests: list[WindowRequest],
    config: CropConfig | None = None,
    sources: dict[str, VideoSource] | None = None,
) -> BatchResult:
    """Run every call of a batch; results in call order (see module docstring).

    ``sources`` may hold already-open ``VideoSource``s by path (e.g. from the overview), which are
    reused and not counted as opens.
    """
    config = config or CropConfig()
    t0 = time.perf_counter()
    stats = BatchStats(calls=len(requests), workers=resolve_workers(config.workers))
    results: list[ToolResult | None] = [None] * len(requests)
    given = dict(sources or {})

    # 1. arguments, before touching any file
    parsed: dict[int, tuple[float, float, list[str]]] = {}
    for n, req in enumerate(requests):
        try:
            parsed[n] = read_window(req.arguments)
        except InvalidWindowError as e:
            results[n] = _error(req, e.kind, str(e))

    # 2. each distinct video opened once
    opened: dict[str, VideoSource] = {}
    open_errors: dict[str, VideoError | Exception] = {}
    created_before: dict[str, int] = {}
    for n in parsed:
        video = requests[n].video
        if video in opened or video in open_errors:
            continue
        if video in given:
            opened[video] = given[video]
            stats.opens[video] = 0
        else:
            try:
                opened[video] = VideoSource(
                    video,
                    device=config.device,
                    num_threads=config.decoder_threads,
                    skip_disposable=config.skip_disposable,
                )
                stats.opens[video] = 1
            except VideoError as e:
                open_errors[video] = e
                stats.opens[video] = 1
                continue
            except Exception as e:  # pragma: no cover - unexpected decoder failure
                logger.exception("internal error opening %s for crop_video", video)
                open_errors[video] = e
                stats.opens[video] = 1
                continue
        # a decoder the source already had (a source passed in) counts as used by this batch
        src = opened[video]
        created_before[video] = src._decoders_created - (src._built_decoder() is not None)

    # 3. windows -> frame indices
    plans: dict[int, tuple[list[tuple[float, int]], float, float, list[str]]] = {}
    for n, (start, end, warns) in parsed.items():
        req = requests[n]
        if req.video in open_errors:
            e = open_errors[req.video]
            kind = getattr(e, "kind", "internal")
            text = (
                str(e) if isinstance(e, VideoError) else f"internal error opening {req.video}: {e}"
            )
            results[n] = _error(req, kind, f"crop_video: {text}", warnings=warns)
            continue
        src = opened[req.video]
        try:
            s, e_, clamp_warns = clamp_window(
                start, end, src.meta.duration, src.table.frame_interval()
            )
        except InvalidWindowError as err:
            results[n] = _error(req, err.kind, str(err), warnings=warns)
            continue
        plans[n] = (window_plan(src, s, e_, config), s, e_, warns + clamp_warns)

    # 4. union of frames per video, decoded once in GOP-aligned lanes
    needed: dict[str, set[int]] = {}
    for n, (plan, *_rest) in plans.items():
        needed.setdefault(requests[n].video, set()).update(i for _, i in plan)
    needed_sorted = {v: sorted(ix) for v, ix in needed.items()}
    stats.distinct_frames = sum(len(ix) for ix in needed_sorted.values())
    decoded = decode_parallel({v: opened[v] for v in needed_sorted}, needed_sorted, stats.workers)
    outcomes = decoded.outcomes
    stats.lanes = len(decoded.lanes)
    stats.lane_gop_frames = [lane.cost for lane in decoded.lanes]
    stats.gop_frames = sum(stats.lane_gop_frames)
    stats.frames_decoded = sum(len(o.frames) for o in outcomes.values())
    stats.frames_failed = sum(len(o.failed) for o in outcomes.values())
    stats.pictures_skipped = sum(o.pictures_skipped for o in outcomes.values())

    # 5. per call, in call order; identical windows share one tensor
    shared: dict[tuple[str, tuple[int, ...]], Any] = {}
    for n, (plan, s, e_, warns) in plans.items():
        req = requests[n]
        src = opened[req.video]
        key = (req.video, tuple(i for _, i in plan))
        try:
            frames = shared.get(key)
            if frames is None:
                frames = src._assemble(plan, outcomes[req.video])
                shared[key] = frames
        except VideoError as err:
            results[n] = _error(req, err.kind, f"crop_video: {err}", s, e_, warns)
            continue
        results[n] = ToolResult(
            ok=True,
            clip=frames,
            times=list(frames.times),
            start=s,
            end=e_,
            warnings=warns + list(frames.warnings),
            failed=list(frames.failed),
            key=req.key,
            video=req.video,
        )

    for video, src in opened.items():
        stats.decoders[video] = src._decoders_created - created_before.get(video, 0)
        if video not in given:
            src.close()
    stats.calls_ok = sum(1 for r in results if r is not None and r.ok)
    stats.frames_returned = sum(len(r.times) for r in results if r is not None and r.ok)
    stats.seconds = time.perf_counter() - t0
    return BatchResult(results=[r for r in results if r is not None], stats=stats)
