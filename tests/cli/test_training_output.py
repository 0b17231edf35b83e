"""What ``paravt sft`` shows a person: its own lines on stderr (the run, the trajectories, one
progress line per logging step), no raw progress bar and no library FutureWarning; and the
trajectory phase keeps no episode's frames once the episode is written."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from paravt.agent.engine import EpisodeEngine
from paravt.backends.scripted import ScriptedBackend
from paravt.train.sft import trajectories as traj
from paravt.train.sft.run import load_sft_config


def test_sft_stderr_is_its_own_lines(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "paravt.cli.main", "sft", "--config", "sft-smoke",
         "--set", f"output_dir={tmp_path / 'run'}", "--set", "trainer.max_steps=2",
         "--set", "trainer.logging_steps=1"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert lines[0].startswith("paravt sft → ")
    assert "FutureWarning" not in r.stderr and "warnings.warn" not in r.stderr
    assert not re.search(r"\d+it/s|it\]|█", r.stderr), r.stderr  # no tqdm bar
    steps = [ln for ln in lines if ln.startswith("step ")]
    assert [s.split(" · ")[0] for s in steps] == ["step 1/2", "step 2/2"]
    others = [ln for ln in lines[1:] if not ln.startswith(("step ", "trajectories: "))]
    assert others == [], r.stderr


def test_a_run_shorter_than_logging_steps_shows_progress_and_writes_its_metrics(
    tmp_path, paravt_cli
):
    """sft-toy logs every 5 steps: a run of fewer steps trained in silence, and its stdout and
    summary.json named a metrics.jsonl that was never written; its README said "a fine-tuned
    version of [None]". The first and the last step are now always logged."""
    run = tmp_path / "run"
    r = paravt_cli("sft", "--config", "sft-smoke", "--set", f"output_dir={run}",
                   "--set", "trainer.max_steps=2", "--set", "trainer.logging_steps=5")  # fmt: skip
    assert r.returncode == 0, r.stderr
    steps = [ln.split(" · ")[0] for ln in r.stderr.splitlines() if ln.startswith("step ")]
    assert steps == ["step 1/2", "step 2/2"], r.stderr
    summary = json.loads((run / "summary.json").read_text())
    metrics = Path(summary["metrics_file"])
    assert str(metrics) in r.stdout and metrics.is_file()
    assert [json.loads(ln)["step"] for ln in metrics.read_text().splitlines()] == [1, 2]
    card = (run / "README.md").read_text()
    assert "[None]" not in card and "Fine-tuned from `tiny:qwen3-vl`" in card


def test_playing_trajectories_keeps_no_requests(tmp_path, tiny_qwen3_dir, gop_video):
    """A scripted backend records every batch's requests (with their frames) for tests to read;
    over a run of 400 toy episodes that grew the process to 12.9 GB. The trajectory phase drops
    them after each batch."""
    from transformers import AutoProcessor

    cfg = load_sft_config("sft-smoke", (f"output_dir={tmp_path / 'run'}",))
    processor = AutoProcessor.from_pretrained(tiny_qwen3_dir)
    backend = ScriptedBackend(cfg.trajectories.options["script"], processor=processor)
    inputs = [
        traj.EpisodeInput(f"q{i}", str(gop_video), "Which?", ["a", "b"], "mcq", frames_k=2)
        for i in range(4)
    ]
    report = traj.generate(
        EpisodeEngine(backend, cfg.engine),
        inputs,
        tmp_path / "cache",
        processor.tokenizer.convert_tokens_to_ids("<|image_pad|>"),
        4,
        2,
        None,
    )
    assert report["kept"] == 4
    assert backend.batches == [] and backend.outputs == []
