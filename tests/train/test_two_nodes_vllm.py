"""The two-node rehearsal against a real vLLM server (marker ``vllm``, from the vLLM environment):
``torchrun --nnodes 2`` with one rank in each of two network namespaces (``netns.TwoNodes``),
``paravt train`` cpu-smoke in server mode against vLLM's OpenAI server (paravt's endpoints, the
tiny model, float32) bound to the host's address on the nodes' bridge.

A node reaches only its own loopback and the bridge, so every request and every reload crossed
the network; the weights check (``vllm_check_weights``, on) compares the server's log-probs with
the policy's after each folder push, so both steps sampled from the weights rank 0 pushed. The
same launch against the stand-in server, and its failures, are in ``test_two_nodes.py``.
"""

from __future__ import annotations

import pytest
from netns import train_on_two_nodes

pytestmark = pytest.mark.vllm


def test_two_nodes_train_against_a_real_vllm_server_across_the_bridge(
    two_nodes, tiny_qwen3_dir, shared_videos, tmp_path
):
    from paravt.eval.agreement import ServeSettings, VLLMServe
    from paravt.train.metrics import read_jsonl

    settings = ServeSettings(
        server="vllm", threads=1, startup_timeout_s=900, trl=True, host=two_nodes.host
    )
    run_dir = tmp_path / "run"
    with VLLMServe(str(tiny_qwen3_dir), settings, str(tmp_path / "serve.log")) as server:
        base = server.base_url.removesuffix("/v1")
        assert base.startswith(f"http://{two_nodes.host}:")
        done = train_on_two_nodes(two_nodes, base, run_dir, tiny_qwen3_dir, shared_videos)
    for r, (rc, err) in enumerate(done):
        assert rc == 0, f"node {r}:\n{err[-4000:]}"
    losses = [row for row in read_jsonl(run_dir / "metrics.jsonl") if "loss" in row]
    assert [row["step"] for row in losses] == [1, 2]
    for rank in (0, 1):
        assert read_jsonl(run_dir / "episodes" / f"rank{rank}.jsonl")
    # the server loaded each step's folder; only the last stays
    assert sorted(p.name for p in (run_dir / "vllm-weights").iterdir()) == ["step-1"]
