"""One rank's rollout raises on 2 gloo ranks: the other rank stops at its next handshake with an
error naming the failed rank and its error, instead of waiting in a collective until the failed
rank's process is gone or the process group times out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gloo_ranks import run_two_ranks
from rank_failure_worker import FAULT

from paravt.errors import RankFailedError
from paravt.rollout.lockstep import Lockstep, RankFailure, announce_failure, exchange


@pytest.mark.ranks
@pytest.mark.slow
@pytest.mark.parametrize(
    "strategy",
    [
        pytest.param(("trainer.fsdp=true", "trainer.fsdp_config.version=2"), id="fsdp2-lockstep"),
        pytest.param((), id="ddp"),
    ],
)
def test_a_failed_rollout_on_rank_1_stops_rank_0_at_its_next_handshake(
    tmp_path, shared_videos, strategy
):
    """Rank 1's backend raises at its second generate call, and its process stays up until rank 0
    has recorded its end, as one does when no launcher agent tears the others down. Under FSDP2
    (every forward a collective, sampling in lockstep) rank 0 waits in that call's handshake;
    under DDP it finishes its rollout and meets the handshake after it. Before the failure was
    announced, rank 0 sat in the lockstep handshake (FSDP2) or the rewards' gather (DDP) until
    rank 1's process went away (308 s, FSDP2: HF then formed the gloo group with torch's 30-minute
    default, whatever ``trainer.ddp_timeout`` said; ``test_ddp_timeout``) and then failed with
    gloo's "Connection closed by peer"; ``ddp_timeout`` and the subprocess timeout bound a hang."""
    worker = Path(__file__).with_name("rank_failure_worker.py")
    done = run_two_ranks(
        worker,
        str(tmp_path / "run"),
        str(shared_videos),
        str(tmp_path),
        *strategy,
        timeout=280,
    )
    assert done.returncode != 0  # the launch fails: both ranks raised
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    # the failed rank raises its own error ...
    assert ranks[1]["error"]["type"] == "RuntimeError"
    assert ranks[1]["error"]["message"].startswith(FAULT)
    # ... and the other rank an error naming it and that error, raised at the next handshake
    assert ranks[0]["error"]["type"] == "RankFailedError", ranks[0]["error"]
    assert "rank 1 failed" in ranks[0]["error"]["message"]
    assert f"RuntimeError: {FAULT}" in ranks[0]["error"]["message"]


def test_a_handshake_names_the_first_failed_rank_and_ignores_an_echo():
    """``exchange`` raises on every rank that reads a failure; a ``RankFailedError`` (read at a
    handshake every rank saw) is not announced again, so nobody waits for a second one."""
    shares = [((1, False), True), RankFailure("ValueError", "bad frame"), RankFailure("X", "y")]
    with pytest.raises(RankFailedError, match="rank 1 failed .* ValueError: bad frame") as e:
        Lockstep(lambda mine: shares).tick({}, running=True)
    assert (e.value.rank, e.value.kind, e.value.message) == (1, "ValueError", "bad frame")
    assert exchange(lambda mine: [mine[0], mine[0]], "ok") == ["ok", "ok"]

    sent: list = []
    announce_failure(sent.extend, e.value)
    assert sent == []
    announce_failure(sent.extend, KeyError("episode 3"))
    assert sent == [RankFailure("KeyError", "'episode 3'")]

    def broken(_):
        raise RuntimeError("Connection closed by peer")

    announce_failure(broken, KeyError("x"))  # logged: the caller raises its own error
