"""SIGTERM while ``paravt train`` runs (no vLLM: the in-process policy samples): the step in
progress ends, a checkpoint is saved, the run raises one line (``RunStopped``), and ``--resume``
ends with every step. The same against a real vLLM server, the rollout stopped mid-step:
tests/train/test_vllm_kill.py."""

from __future__ import annotations

import os
import signal

import pytest


def test_sigterm_saves_the_step_and_resume_finishes_the_run(tmp_path, shared_videos, smoke_args):
    from transformers import TrainerCallback

    from paravt.train.launch.stopping import RunStopped
    from paravt.train.metrics import read_jsonl
    from paravt.train.run import load_command_config, run_training

    class Signal(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            if state.global_step == 1:  # step 2 begins: the signal comes mid-step
                os.kill(os.getpid(), signal.SIGTERM)

    run_dir = tmp_path / "run"
    cfg = load_command_config(
        "cpu-smoke", smoke_args(run_dir, shared_videos, "trainer.save_steps=100")
    )
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RunStopped) as stopped:
        run_training(cfg, on_trainer=lambda trainer: trainer.add_callback(Signal()))
    assert signal.getsignal(signal.SIGTERM) == before  # the handler is the run's only
    assert str(stopped.value) == (
        f"stopped by SIGTERM after step 2, saved as {run_dir / 'checkpoint-2'}: run the same "
        "command with --resume to continue it"
    )
    assert (run_dir / "checkpoint-2").is_dir() and not (run_dir / "final").exists()
    summary = run_training(cfg, resume=True)
    assert summary["global_step"] == 3 and summary["resumed_from"].endswith("checkpoint-2")
    rows = [r for r in read_jsonl(run_dir / "metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2, 3]
