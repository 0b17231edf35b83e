"""Bounded staleness on 2 trainer ranks: ``paravt train`` at ``max_staleness = 2`` on 2 gloo ranks
(torchrun; ``async_ranks_worker.py``) under FSDP2 and DeepSpeed ZeRO-3, in server mode against the
stand-in server (``standin_vllm``) that both ranks share, for 4 steps.

What must hold: both ranks finish every step; every episode a step learns from is at
most k versions old; a weight push a step on each rank; and a rank whose sampling fails stops
the other with one line instead of leaving it in a collective. The same against a real vLLM
server: ``test_vllm_async_ranks.py`` (marker ``vllm``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from async_ranks_worker import FAULT
from gloo_ranks import run_two_ranks, write_zero3_config
from standin_vllm import StandInServer

WORKER = Path(__file__).with_name("async_ranks_worker.py")
FSDP2 = ("trainer.fsdp=true", "trainer.fsdp_config.version=2")


def zero3(tmp_path: Path) -> tuple[str, ...]:
    ds3 = write_zero3_config(tmp_path)
    # accelerate takes DeepSpeed only off the CPU path (the worker's shim)
    return ("trainer.use_cpu=false", f"trainer.deepspeed={ds3}")


def run_ranks(tmp_path, tiny_qwen3_dir, shared_videos, fault: str, *strategy: str):
    server = StandInServer.for_model(tiny_qwen3_dir).start()
    try:
        done = run_two_ranks(
            WORKER, str(tmp_path / "run"), str(shared_videos), str(tiny_qwen3_dir), server.url,
            str(tmp_path), fault, *strategy, timeout=600,
        )  # fmt: skip
        reloads = list(server.reloads)
    finally:
        server.stop()
    ranks = []
    for r in (0, 1):
        path = tmp_path / f"rank{r}.json"
        assert path.is_file(), (r, done.stderr[-4000:])
        ranks.append(json.loads(path.read_text()))
    return done, ranks, reloads


@pytest.mark.ranks
@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["fsdp2", "zero3", "fsdp2-process"])
def test_k2_on_two_sharded_ranks_finishes_with_no_group_older_than_k(
    tmp_path, tiny_qwen3_dir, shared_videos, strategy
):
    """``fsdp2-process``: each rank's producer samples in a rollout process of its own
    (``trainer.producer: process``)."""
    if strategy == "zero3":
        pytest.importorskip("deepspeed")
    keys = zero3(tmp_path) if strategy == "zero3" else FSDP2
    if strategy.endswith("-process"):
        keys = (*keys, "trainer.producer=process")
    done, ranks, reloads = run_ranks(tmp_path, tiny_qwen3_dir, shared_videos, "none", *keys)
    assert done.returncode == 0, (ranks, done.stderr[-4000:])
    for rank in ranks:
        assert "error" not in rank, rank
        assert rank["steps"] == 4 and rank["pushed"] == [0, 1, 2, 3]
        ages = [age for _, age in rank["ages"]]
        assert ages and all(age is not None and 0 <= age <= 2 for age in ages), rank["ages"]
        assert sorted({step for step, _ in rank["ages"]}) == [1, 2, 3, 4]
    assert len(reloads) == 4  # rank 0 alone reloads, once a step


@pytest.mark.ranks
@pytest.mark.slow
def test_a_rank_whose_sampling_fails_stops_the_other_with_one_line(
    tmp_path, tiny_qwen3_dir, shared_videos
):
    done, ranks, _ = run_ranks(tmp_path, tiny_qwen3_dir, shared_videos, "rank1", *FSDP2)
    assert done.returncode != 0
    assert "error" in ranks[1] and FAULT in ranks[1]["error"]["message"], ranks[1]
    err = ranks[0].get("error")
    assert err is not None, ranks[0]
    assert "\n" not in err["message"] and "rank 1" in err["message"], err
    assert ranks[0].get("steps") is None
