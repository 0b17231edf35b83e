"""``test_async_ranks`` against a real vLLM server (``vllm`` marker: the vLLM environment,
``scripts/vllm-env.sh``; CI's vLLM stage): ``paravt train`` at ``max_staleness = 2`` on 2 gloo
ranks (torchrun; ``async_ranks_worker.py``) under FSDP2 and DeepSpeed ZeRO-3, both ranks
sampling from the session's one CPU server (``vllm_tiny_server``) and pushing by folder reload,
for 4 steps: both ranks finish, every consumed episode is at most 2 versions old, a push a step.
The ZeRO-3 case needs DeepSpeed in the vLLM environment (``.ci/run`` installs it there). Run on
the 2-core host at load 2.6-2.8: FSDP2 194 s, ZeRO-3 137 s, both passed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gloo_ranks import run_two_ranks
from test_async_ranks import FSDP2, zero3

pytestmark = pytest.mark.vllm

WORKER = Path(__file__).with_name("async_ranks_worker.py")


@pytest.mark.parametrize("strategy", ["fsdp2", "zero3"])
def test_k2_on_two_sharded_ranks_against_real_vllm(
    vllm_tiny_server, tiny_qwen3_dir, tmp_path, shared_videos, strategy
):
    from paravt.rollout.vllm_server_client import VLLMServerClient

    if strategy == "zero3":
        pytest.importorskip("deepspeed")
    keys = FSDP2 if strategy == "fsdp2" else zero3(tmp_path)
    base = vllm_tiny_server.base_url.removesuffix("/v1")
    try:
        done = run_two_ranks(
            WORKER, str(tmp_path / "run"), str(shared_videos), str(tiny_qwen3_dir), base,
            str(tmp_path), "none", *keys, timeout=900,
        )  # fmt: skip
    finally:  # the server is shared with the session's other vllm tests
        VLLMServerClient(base).reload_weights(str(tiny_qwen3_dir))
    assert done.returncode == 0, done.stderr[-4000:]
    for r in (0, 1):
        rank = json.loads((tmp_path / f"rank{r}.json").read_text())
        assert "error" not in rank, rank
        assert rank["steps"] == 4 and rank["pushed"] == [0, 1, 2, 3]
        ages = [age for _, age in rank["ages"]]
        assert ages and all(age is not None and 0 <= age <= 2 for age in ages), rank["ages"]
