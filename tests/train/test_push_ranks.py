"""The NCCL push at bounded staleness on 2 gloo ranks (torchrun; ``push_ranks_worker.py``)
against a server with keep-mode pause semantics (``keep_pause_standin.py``).

Why: TRL's pause is ``/pause?mode=keep``, which freezes every request on the server. When rank 0
paused the server as soon as its own requests had ended, rank 1, still waiting in its gate for a
request of its own, waited for one that could not finish: rank 1 ``TimeoutError: 1 sampling
requests still running after 12.0 s`` and rank 0 a broken collective (before the fix; with the
default ``max_staleness_pause_s`` of 1500 s, 25 minutes at step 1). Now no rank waits for its own
requests at a push (``paravt.rollout.gate``: they go on across it), and rank 0 pauses the server
only after an exchange every rank has joined: rank 1's request is frozen by the pause and
resumed after it, and finishes under its start version.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gloo_ranks import run_two_ranks
from keep_pause_standin import KeepPauseServer
from push_ranks_worker import WORK_S

WORKER = Path(__file__).with_name("push_ranks_worker.py")


@pytest.mark.ranks
def test_no_rank_pauses_the_server_while_another_rank_waits_for_a_request(tmp_path):
    server = KeepPauseServer().start()
    try:
        done = run_two_ranks(WORKER, str(tmp_path), server.url, timeout=300)
        events = list(server.events)
    finally:
        server.stop()
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert not any("error" in r for r in ranks), (ranks, events, done.stderr[-3000:])
    assert done.returncode == 0, done.stderr[-3000:]
    # rank 1's request went on across the push: frozen by the pause, done after the resume
    assert events == [
        "generate-start rank1",
        "pause mode=keep",
        "resume",
        "generate-done rank1",
    ], events
    assert ranks[1]["request_version"] == 0  # tagged with the version it started under
    assert ranks[1]["sync_s"] < WORK_S  # the push did not wait for it
    assert all(r["pushed"] == [1] and r["gate_version"] == 1 for r in ranks)


@pytest.mark.ranks
def test_a_rank_killed_mid_push_stops_the_other_and_the_server_is_not_left_paused(tmp_path):
    """Rank 1 is SIGKILLed inside the push, after rank 0 paused the server: rank 0 stops within
    seconds (not the process group's timeout) with its gate closed, so no rollout starts on
    weights the server may not hold, the push is not recorded as done, and the server was
    resumed."""
    server = KeepPauseServer().start()
    try:
        done = run_two_ranks(WORKER, str(tmp_path), server.url, "rank1-dies", timeout=300)
        events = list(server.events)
    finally:
        server.stop()
    assert done.returncode != 0
    assert not (tmp_path / "rank1.json").exists()  # killed
    path = tmp_path / "rank0.json"
    assert path.is_file(), done.stderr[-3000:]
    rank0 = json.loads(path.read_text())
    print(rank0, events)
    assert "error" in rank0 and "\n" not in rank0["error"], rank0
    assert rank0["sync_s"] < 60, rank0  # the process group's timeout is 90 s
    assert rank0["gate_closed"] and rank0["pushed"] == [], rank0
    assert "pause mode=keep" in events and "resume" in events, events
    assert events.index("resume") > events.index("pause mode=keep"), events
