"""The reference's batch normalisation (``rewards.advantage_norm: group_then_batch``) on 2 gloo
ranks: the mean and the spread are the whole step's, every generated token of both ranks, as the
reference's all-reduce makes them (docs/PROTOCOL.md §7.2) — not each rank's own. With the KL as a
per-token reward on (and TRL's β at 0), so the reference model is built and used on both ranks."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from gloo_ranks import run_two_ranks

WORKER = Path(__file__).with_name("shaping_rank_worker.py")


@pytest.mark.ranks
def test_the_batch_normalisation_spans_both_ranks(tmp_path, shared_videos):
    done = run_two_ranks(
        WORKER,
        str(tmp_path),
        f"output_dir={tmp_path / 'run'}",
        "data.path=builtin:smoke",
        f"data.video_root={shared_videos}",
        "trainer.max_steps=2",
        "trainer.save_steps=100",
        "trainer.per_device_train_batch_size=3",  # the middle group split across the ranks
        "trainer.beta=0",
        "rewards.token_anchor=false",
        "rewards.advantage_norm=group_then_batch",
        "rewards.kl_in_reward=0.01",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    checked = 0
    for step in (1, 2):
        parts = [torch.load(tmp_path / f"rank{r}-step{step}.pt") for r in (0, 1)]
        tokens = [p["advantages"][p["mask"].bool()].double() for p in parts]
        both = torch.cat(tokens)
        if both.abs().max() < 1e-6:  # every group flat and no KL yet: nothing to normalise
            continue
        # the step's tokens, both ranks: mean 0 and sample spread 1 (up to the eps)
        assert both.mean().abs() < 1e-4 and (both.std() - 1).abs() < 1e-3, step
        # each rank alone is not: its own statistics were not the ones used
        stats = [(round(t.mean().item(), 4), round(t.std().item(), 4), t.numel()) for t in tokens]
        assert any(t.mean().abs() > 1e-3 or (t.std() - 1).abs() > 1e-3 for t in tokens), stats
        checked += 1
    assert checked, "no step had an advantage to normalise"
