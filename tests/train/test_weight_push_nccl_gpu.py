"""The NCCL weight push against a real vLLM server, on 2 GPUs. **It has NOT run**: this
project's host has no GPU (and no CUDA build of vLLM); it is written for a machine with 2 CUDA
GPUs and vLLM 0.32-0.34 (CUDA) in the environment it runs from, and is skipped elsewhere
(markers ``gpu`` and ``vllm``). docs/train/VLLM.md says the same.

Shape: the server serves the tiny Qwen3-VL in bfloat16 on GPU 1
(``--weight-transfer-config '{"backend": "nccl"}'``, dev mode). Two trainer ranks (torchrun, a
gloo group, ``weight_push_worker.py nccl-gpu``) hold the same weights with ``lm_head`` scaled by
4, FSDP2-sharded on their CPUs; only rank 0 sees GPU 0, joins vLLM's NCCL group (rank 0, the
master, its own address) and sends, while both ranks gather. After each of two pushes the
server's logprobs on the weights probe are the policy's (``within`` the colocate tolerance)
where before they were not; rank 1 never opened a transfer. What runs of it on a CPU: the same
push with the NCCL transfer replaced by a recorder (test_weight_push_ranks.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gloo_ranks import run_two_ranks

from paravt.rollout.vllm_server import within

WORKER = Path(__file__).with_name("weight_push_worker.py")
pytestmark = [pytest.mark.gpu, pytest.mark.vllm]


def test_two_trainer_ranks_push_over_nccl_and_the_server_holds_the_weights(
    tmp_path, tiny_qwen3_dir
):
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs 2 CUDA GPUs: the server on one, trainer rank 0's sender on the other")
    from paravt.eval.agreement import ServeSettings, VLLMServe

    class ServeOnGpu1(VLLMServe):
        def environment(self) -> dict[str, str]:
            return {**super().environment(), "CUDA_VISIBLE_DEVICES": "1"}

    settings = ServeSettings(
        server="vllm", dtype="bfloat16", trl=True, startup_timeout_s=900,
        extra_args=("--weight-transfer-config", '{"backend": "nccl"}',
                    "--gpu-memory-utilization", "0.3"),
    )  # fmt: skip
    with ServeOnGpu1(str(tiny_qwen3_dir), settings, str(tmp_path / "serve.log")) as server:
        url = server.base_url.removesuffix("/v1")
        done = run_two_ranks(
            WORKER, "nccl-gpu", str(tmp_path), url, str(tiny_qwen3_dir), timeout=900, devices="0"
        )
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["opened"] and not ranks[1]["opened"]
    assert all(r["pushed"] == [0, 1] for r in ranks)
    before, *after = ranks[0]["gaps"]
    assert ranks[1]["gaps"] == ranks[0]["gaps"]  # the verdict is exchanged
    assert not within(before) and all(within(g) for g in after), ranks[0]["gaps"]
