"""Fixtures of the train room: one in-process cpu-smoke run shared by the smoke tests."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch


def smoke_overrides(run_dir: Path, videos: Path, *extra: str) -> tuple[str, ...]:
    return (f"output_dir={run_dir}", "data.path=builtin:smoke", f"data.video_root={videos}", *extra)


def forward_views(trainer, out) -> dict:
    """Log-probs of a rollout's batch as the loss forward sees it, plus plain-forward logits and a
    control forward with blank frames — taken before the optimizer step changes the weights."""
    ids = torch.cat([out["prompt_ids"], out["completion_ids"]], 1)
    mask = torch.cat([out["prompt_mask"], out["completion_mask"]], 1)
    kw = {
        "input_ids": ids,
        "attention_mask": mask,
        "pixel_values": out["pixel_values"],
        "image_grid_thw": out["image_grid_thw"],
        "mm_token_type_ids": out["mm_token_type_ids"],
    }
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            trainer.model,
            ids,
            mask,
            out["completion_ids"].size(1),
            num_images=out["num_images"],
            pixel_values=out["pixel_values"],
            image_grid_thw=out["image_grid_thw"],
            mm_token_type_ids=out["mm_token_type_ids"],
        )
        logits = trainer.model(**kw).logits
        blank = trainer.model(**dict(kw, pixel_values=torch.zeros_like(out["pixel_values"]))).logits
    return {
        "logps": logps,
        "logits": logits,
        "blank": blank,
        "temperature": trainer.temperature,
        "suppressed": list(trainer._backend.suppress_ids),
        "width": out["prompt_ids"].size(1),
    }


class Probe:
    """What the smoke run's rollouts and loss forwards looked like."""

    def __init__(self):
        self.rollouts: list[dict] = []
        self.outputs: list[dict] = []
        self.visual_calls: list[tuple[bool, int]] = []
        self.loss_image_rows: list[int] = []  # pixel rows each loss forward was given
        self.initial_state: dict = {}
        self.trainer = None
        self.parity: dict = {}

    def attach(self, trainer):
        self.trainer = trainer
        trainer.keep_last_rollout = True
        self.initial_state = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
        original = trainer._generate_and_score_completions

        def wrapped(inputs):
            out = original(inputs)
            if not self.rollouts:
                self.parity = forward_views(trainer, out)
            self.rollouts.append(dict(trainer.last_rollout))
            self.outputs.append(
                {
                    k: (v.detach().cpu().clone() if isinstance(v, torch.Tensor) else copy.copy(v))
                    for k, v in out.items()
                }
            )
            return out

        trainer._generate_and_score_completions = wrapped
        compute_loss = trainer._compute_loss

        def loss(model, inputs):
            pv = inputs.get("pixel_values")
            self.loss_image_rows.append(0 if pv is None else int(pv.shape[0]))
            return compute_loss(model, inputs)

        trainer._compute_loss = loss
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


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory, shared_videos):
    from paravt.train.run import load_command_config, run_training

    run_dir = tmp_path_factory.mktemp("smoke") / "run"
    cfg = load_command_config(
        "cpu-smoke",
        smoke_overrides(
            run_dir,
            shared_videos,
            "trainer.sampling_logprobs=true",
            "engine.max_new_tokens=32",
            "trainer.episode_dump_every=2",  # steps 1 and 3 (tests/train/test_episode_dump.py)
        ),
    )
    probe = Probe()
    summary = run_training(cfg, on_trainer=probe.attach)
    return run_dir, summary, probe


@pytest.fixture
def two_nodes():
    """Two network namespaces as two nodes (``netns.TwoNodes``), removed after the test; the test
    skips, saying why, where this machine cannot make them (not root, no iproute2)."""
    from netns import NodesUnavailable, TwoNodes

    try:
        opened = TwoNodes.open()
    except NodesUnavailable as e:
        pytest.skip(str(e))
    with opened:
        yield opened
