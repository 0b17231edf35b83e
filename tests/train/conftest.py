"""Fixtures of the train room: one in-process cpu-smoke run shared by the smoke tests."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch


def smoke_overrides(run_dir: Path, videos: Path, *extra: str) -> tuple[str, ...]:
    return (f"output_dir={run_dir}", f"data.video_root={videos}", *extra)


class Probe:
    """What the smoke run's rollouts and loss forwards looked like."""

    def __init__(self):
        self.rollouts: list[dict] = []
        self.outputs: list[dict] = []
        self.visual_calls: list[tuple[bool, int]] = []
        self.initial_state: dict = {}
        self.trainer = None

    def attach(self, trainer):
        self.trainer = trainer
        self.initial_state = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
        original = trainer._generate_and_score_completions

        def wrapped(inputs):
            out = original(inputs)
            self.rollouts.append(dict(trainer.last_rollout))
            self.outputs.append(
                {
                    k: (v.detach().cpu().clone() if isinstance(v, torch.Tensor) else copy.copy(v))
                    for k, v in out.items()
                }
            )
            return out

        trainer._generate_and_score_completions = wrapped
        visual = trainer.model.model.visual

        def hook(module, args, output):
            self.visual_calls.append((torch.is_grad_enabled(), int(args[0].shape[0])))

        visual.register_forward_hook(hook)


@pytest.fixture
def train_probe():
    """``train_probe()`` → a fresh ``Probe`` to pass as ``run_training(..., on_trainer=probe.attach)``."""
    return Probe


@pytest.fixture
def smoke_args():
    """``smoke_args(run_dir, videos, *extra)`` → the cpu-smoke ``--set`` overrides for a test run."""
    return smoke_overrides


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory, shared_videos):
    from paravt.train.run import load_command_config, run_training

    run_dir = tmp_path_factory.mktemp("smoke") / "run"
    cfg = load_command_config("cpu-smoke", smoke_overrides(run_dir, shared_videos))
    probe = Probe()
    summary = run_training(cfg, on_trainer=probe.attach)
    return run_dir, summary, probe
