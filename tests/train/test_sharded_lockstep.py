"""Sharded weights (FSDP2, DeepSpeed ZeRO-3) on 2 gloo ranks whose episodes differ in rounds,
budgets, sub-agent calls and loss rows: the in-process rollout and the loss forwards stay in
lockstep."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gloo_ranks import run_two_ranks, write_zero3_config
from transformers.integrations.deepspeed import (
    is_deepspeed_zero3_enabled,
    set_hf_deepspeed_config,
    unset_hf_deepspeed_config,
)

from paravt.errors import ConfigError
from paravt.train.launch.startup import whole_models
from paravt.train.trainer import check_strategy

WORKER = Path(__file__).with_name("sharded_lockstep_worker.py")


@pytest.mark.ranks
def test_fsdp2_ranks_with_different_episodes_stay_in_lockstep(tmp_path, shared_videos):
    """Before the lockstep the ranks' collectives crossed: gloo aborted ("Received data size
    doesn't match expected size", an FSDP all-gather met a metrics gather); on GPUs they hang.
    ``trainer.ddp_timeout=60`` and the subprocess timeout bound a hang here."""
    done = run_two_ranks(
        WORKER,
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
    _assert_lockstep_held(ranks)
    _assert_left_cleanly(ranks)


def _assert_left_cleanly(ranks: list[dict]) -> None:
    """No gloo backend outlives ``leave_process_group``: one that does is destroyed while the
    interpreter finalizes, and under load that aborted a rank after its work was done (exit -6,
    "terminate called without an active exception"; 3 of 40 ZeRO-3 runs under load before the
    engine's references were released). Under ZeRO-3 two backends were left running here."""
    for rank in ranks:
        assert rank["gloo_threads_after_leaving"] == [], rank["gloo_threads_after_leaving"]


def _assert_lockstep_held(ranks: list[dict]) -> None:
    # the ranks' work really differs: rank 0 samples sub-agents (one more round) and trains on them
    assert ranks[0]["calls"] > ranks[1]["calls"]
    assert ranks[0]["subagents"] > 0 and ranks[1]["subagents"] == 0
    # and still every loss forward is matched: as many rows on both ranks
    assert ranks[0]["rows"] == ranks[1]["rows"]
    assert ranks[1]["fillers"] > 0  # rank 1 sampled fillers to join rank 0's extra calls


@pytest.mark.ranks
@pytest.mark.slow
@pytest.mark.parametrize("gather", [False, True], ids=["sharded-rollout", "gathered-rollout"])
def test_zero3_ranks_with_different_episodes_stay_in_lockstep(tmp_path, shared_videos, gather):
    """DeepSpeed's ZeRO-3 engine (its CPU accelerator, gloo), parameters partitioned over the two
    ranks. Without ``ds3_gather_for_generation`` every generate step and loss forward is a
    collective: with the lockstep off (the backend's ``lockstep`` None, ``_lockstep_rows``
    False) this run aborted in gloo ("Received data size doesn't match expected size") within a
    minute. With the gather the rollout needs no lockstep (no fillers, as many calls as each
    rank's episodes need) and only the loss rows are matched."""
    pytest.importorskip("deepspeed")
    ds3 = write_zero3_config(tmp_path)
    done = run_two_ranks(
        WORKER,
        str(tmp_path / "run"),
        str(shared_videos),
        str(tmp_path),
        "trainer.use_cpu=false",  # accelerate takes DeepSpeed only off the CPU path (worker shim)
        f"trainer.deepspeed={ds3}",
        f"trainer.ds3_gather_for_generation={str(gather).lower()}",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for rank in ranks:
        assert rank["strategy"] == "DistributedType.DEEPSPEED" and rank["steps"] == 1
        assert rank["wrapped"] == "DeepSpeedEngine" and rank["world"] == 2
        assert rank["shard_share"] == pytest.approx(0.5, abs=0.01)  # each rank holds half
        assert rank["lockstep"] is not gather
    if gather:
        assert ranks[0]["calls"] > ranks[1]["calls"] and ranks[1]["fillers"] == 0
        assert ranks[0]["subagents"] > 0 and ranks[0]["rows"] == ranks[1]["rows"]
    else:
        _assert_lockstep_held(ranks)
    _assert_left_cleanly(ranks)


class _HfZero3:
    def is_zero3(self) -> bool:
        return True


def test_tiny_model_is_built_whole_under_zero3():
    """The main process builds the tiny model alone: outside ZeRO-3's partitioning, which is a
    collective, and back inside afterwards."""
    args = type("Args", (), {"hf_deepspeed_config": _HfZero3()})()
    set_hf_deepspeed_config(args.hf_deepspeed_config)
    try:
        with whole_models(args):
            assert not is_deepspeed_zero3_enabled()
        assert is_deepspeed_zero3_enabled()
    finally:
        unset_hf_deepspeed_config()
    with whole_models(type("Args", (), {})()):  # no DeepSpeed: nothing to do
        assert not is_deepspeed_zero3_enabled()


class _Parallelism:
    tp_size, cp_size, sp_size = 2, 1, 1


def test_tensor_parallelism_is_refused_at_start():
    with pytest.raises(ConfigError, match="tp_size=2.*FSDP2"):
        check_strategy(type("Args", (), {"parallelism_config": _Parallelism()})())
    check_strategy(type("Args", (), {"parallelism_config": None})())
