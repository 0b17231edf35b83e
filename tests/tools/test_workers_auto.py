"""``workers=0`` (the default) gives the decoder pool one thread per CPU the process may use."""

from __future__ import annotations

import os

import pytest

from paravt.tools import CropConfig, WindowRequest, execute_windows
from paravt.video.parallel import resolve_workers


def test_auto_workers_follow_the_cpu_affinity(gop_video):
    allowed = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, sorted(allowed)[:1])  # what `taskset -c N` does
        assert resolve_workers(0) == 1
        one = execute_windows([WindowRequest(str(gop_video), {"start_time": 0, "end_time": 9})])
        assert one.stats.workers == 1 and one.stats.lanes == 1
    finally:
        os.sched_setaffinity(0, allowed)
    assert resolve_workers(0) == len(allowed) and CropConfig().workers == 0
    assert resolve_workers(3) == 3
    with pytest.raises(ValueError, match="workers must be >= 0"):
        resolve_workers(-1)
