"""A few ``paravt sft`` steps on trajectories the toy oracle plays through the real engine over
generated toy videos lower the loss on those trajectories (the toy task's fast check), under the
short toy system prompt the experiment uses."""

from __future__ import annotations

from pathlib import Path

import torch

from paravt.toy.prompts import toy_system_prompt


def _loss(model_dir: Path, cache: Path) -> float:
    """Mean loss of a model over every cached trajectory (generated tokens only)."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from paravt.train.sft.dataset import StreamCollator, trajectory_dataset

    model = AutoModelForImageTextToText.from_pretrained(model_dir).eval()
    collate = StreamCollator(AutoProcessor.from_pretrained(model_dir))
    with torch.no_grad():
        return float(model(**collate(list(trajectory_dataset(cache)))).loss)


def test_few_sft_steps_on_oracle_trajectories_lower_their_loss(toy_eval, tmp_path):
    from paravt.train.sft.run import load_sft_config, run_sft

    out, _, _ = toy_eval
    run_dir = tmp_path / "sft"
    cfg = load_sft_config(
        "sft-toy",
        (
            "model=tiny:qwen3-vl",  # the test-size model: the toy preset is for learning runs
            f"output_dir={run_dir}",
            f"data.path={out / 'eval.jsonl'}",
            f"data.video_root={out}",
            f"engine.system_prompt={toy_system_prompt('parallel')}",
            "engine.min_pixels=1024",
            "engine.max_pixels=1024",
            "engine.crop.min_pixels=1024",
            "engine.crop.max_pixels=1024",
            "frames_gating=false",
            "trajectories.options.tool_prior=1.0",
            "trajectories.options.format_noise=0.0",
            "trainer.per_device_train_batch_size=4",
            "trainer.max_steps=8",
            "trainer.warmup_steps=0",
            "trainer.learning_rate=3e-3",
            "trainer.logging_steps=1",
        ),
    )
    summary = run_sft(cfg)
    cache = run_dir / "trajectories"
    assert summary["global_step"] == 8
    assert summary["trajectories"]["kept"] == 12 and summary["trajectories"]["skipped"] == 0
    first = torch.load(min(cache.glob("[0-9]*.pt")), weights_only=True)
    assert len(first["frames"]) == 4 + 5 * 16  # the overview, then the five-window sweep
    before = _loss(run_dir / "tiny-qwen3-vl", cache)
    after = _loss(Path(summary["final_model"]), cache)
    assert after < 0.8 * before, (before, after)
