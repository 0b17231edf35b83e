"""Sharded weights (FSDP2) on 2 gloo ranks whose episodes differ in rounds, budgets, sub-agent
calls and loss rows: the in-process rollout and the loss forwards stay in lockstep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gloo_ranks import run_two_ranks

from paravt.errors import ConfigError
from paravt.train.trainer import check_strategy


def test_fsdp2_ranks_with_different_episodes_stay_in_lockstep(tmp_path, shared_videos):
    """Before the lockstep the ranks' collectives crossed: gloo aborted ("Received data size
    doesn't match expected size", an FSDP all-gather met a metrics gather); on GPUs they hang.
    ``trainer.ddp_timeout=60`` and the subprocess timeout bound a hang here."""
    worker = Path(__file__).with_name("sharded_lockstep_worker.py")
    done = run_two_ranks(
        worker,
        str(tmp_path / "run"),
        str(shared_videos),
        str(tmp_path),
        "trainer.fsdp=true",
        "trainer.fsdp_config.version=2",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for rank in ranks:
        assert rank["strategy"] == "DistributedType.FSDP" and rank["steps"] == 1
        assert rank["wrapped"].startswith("FSDP")  # FSDP2 wraps the model class in place
    # the ranks' work really differs: rank 0 samples sub-agents (one more round) and trains on them
    assert ranks[0]["calls"] > ranks[1]["calls"]
    assert ranks[0]["subagents"] > 0 and ranks[1]["subagents"] == 0
    # and still every loss forward is matched: as many rows on both ranks
    assert ranks[0]["rows"] == ranks[1]["rows"]
    assert ranks[1]["fillers"] > 0  # rank 1 sampled fillers to join rank 0's extra calls


class _Parallelism:
    tp_size, cp_size, sp_size = 2, 1, 1


def test_tensor_parallelism_is_refused_at_start():
    with pytest.raises(ConfigError, match="tp_size=2.*FSDP2"):
        check_strategy(type("Args", (), {"parallelism_config": _Parallelism()})())
    check_strategy(type("Args", (), {"parallelism_config": None})())
