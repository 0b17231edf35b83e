"""Decode the frames several requests need, on a bounded pool of decoders.

The needed frame indices of each video are split into GOP-aligned lanes (``lanes.plan_lanes``)
and decoded on up to ``workers`` threads; torchcodec releases the GIL inside its decode calls
(measured: a pure-Python thread keeps running during a decode), so threads decode in parallel.
A lane borrows an idle decoder of its video or makes a new one, so a video never has more than
``workers`` decoders. Failures stay inside their lane's frames.

This module sits below ``video.source`` (which calls ``decode_parallel``): it knows a source
only through the ``PooledSource`` protocol (its frame table and its ``SourceDecoders``), so the
two never import each other.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from paravt.video.decode import DecodeOutcome, FrameResize
from paravt.video.decoders import SourceDecoders
from paravt.video.errors import VideoError
from paravt.video.lanes import Lane, plan_lanes
from paravt.video.meta import FrameTable

__all__ = ["decode_parallel", "resolve_workers"]

logger = logging.getLogger(__name__)


class PooledSource(Protocol):
    """What a lane needs of an open video (``VideoSource`` provides it): the frame table, to
    split the plan into GOP-aligned lanes, and the video's decoders."""

    table: FrameTable
    decoders: SourceDecoders


class _DecoderPool:
    """Idle decoders per video; a lane borrows one, a new one is made only when none is idle.

    The source's own decoder joins the pool only if it is already built: a new one is built from
    the frame table (half the cost of the own decoder's exact-mode scan), and lanes that decode
    from filtered packets (video.disposable) need none at all."""

    def __init__(self, sources: dict[str, PooledSource]):
        self._sources = sources
        self._idle: dict[str, list] = {
            v: [d] if (d := s.decoders.built()) is not None else [] for v, s in sources.items()
        }
        self._lock = threading.Lock()

    def acquire(self, video: str):
        with self._lock:
            if self._idle[video]:
                return self._idle[video].pop()
        return self._sources[video].decoders.new()

    def release(self, video: str, decoder) -> None:
        with self._lock:
            self._idle[video].append(decoder)


@dataclass
class ParallelDecode:
    outcomes: dict[str, DecodeOutcome]
    lanes: list[Lane]


def _run_lane(
    lane: Lane,
    sources: dict[str, PooledSource],
    pool: _DecoderPool,
    resize: FrameResize | None = None,
) -> DecodeOutcome:
    decoders = sources[lane.video].decoders
    skipped = decoders.decode_skipping(lane.indices, resize)  # never raises: None = not here
    if skipped is not None:  # no pooled decoder needed: the lane decoded its own filtered stream
        return decoders.settle(skipped, resize)
    if not decoders.seeks_are_safe():  # decoded packet by packet from restart points instead
        return decoders.decode(lane.indices, try_skipping=False, resize=resize)
    try:
        decoder = pool.acquire(lane.video)
    except VideoError as e:
        return DecodeOutcome(failed={i: str(e) for i in lane.indices})
    try:
        return decoders.decode(lane.indices, decoder, try_skipping=False, resize=resize)
    except Exception as e:  # a decoder bug must not take the batch down
        logger.exception(
            "lane %s of %s failed; its frames are reported failed", lane.indices, lane.video
        )
        return DecodeOutcome(failed={i: f"{type(e).__name__}: {e}" for i in lane.indices})
    finally:
        pool.release(lane.video, decoder)


def resolve_workers(workers: int) -> int:
    """``workers``, or for ``0`` ("auto") one per CPU this process may run on (its affinity, so
    ``taskset`` and container CPU sets count): decoding is CPU-bound with one FFmpeg thread per
    decoder, so a lane per core is what keeps every core busy (benchmarks/README.md, "Core
    scaling"; a batch never uses more threads than it has lanes)."""
    workers = int(workers)
    if workers < 0:
        raise ValueError(f"workers must be >= 0 (0 = one per available core), got {workers}")
    if workers == 0:
        try:
            return max(1, len(os.sched_getaffinity(0)))
        except AttributeError:  # no affinity on this platform
            return os.cpu_count() or 1
    return workers


def decode_parallel(
    sources: dict[str, PooledSource],
    needed: dict[str, list[int]],
    workers: int,
    resize: FrameResize | None = None,
) -> ParallelDecode:
    """Decode sorted unique ``needed[video]`` indices of each video with at most ``workers``
    threads (0: one per available core, ``resolve_workers``).

    ``resize`` (the caller's, e.g. the engine's pixel budget): each lane resizes its frames right
    after decoding them, a few at a time (``decode.RESIZE_CHUNK``), so the outcomes hold only
    resized frames and the full-size ones never pile up (64 frames of 720p are 177 MB)."""
    workers = resolve_workers(workers)
    needed = {v: ix for v, ix in needed.items() if ix}
    outcomes = {v: DecodeOutcome() for v in needed}
    lanes = plan_lanes(needed, {v: sources[v].table for v in needed}, workers)
    if not lanes:
        return ParallelDecode(outcomes, lanes)
    pool = _DecoderPool({v: sources[v] for v in needed})
    if workers == 1 or len(lanes) == 1:
        results = [_run_lane(lane, sources, pool, resize) for lane in lanes]
    else:
        with ThreadPoolExecutor(max_workers=min(workers, len(lanes))) as ex:
            results = list(ex.map(lambda ln: _run_lane(ln, sources, pool, resize), lanes))
    for lane, out in zip(lanes, results, strict=True):
        outcomes[lane.video].merge(out)
    return ParallelDecode(outcomes, lanes)
