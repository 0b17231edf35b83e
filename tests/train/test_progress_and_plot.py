"""The live training line and `paravt plot --metric`: what a person watches and draws."""

from __future__ import annotations

import io
import json

import pytest
from PIL import Image
from rich.console import Console
from transformers import TrainerControl, TrainerState, TrainingArguments

from paravt.cli.main import main
from paravt.train.plot import training_figure
from paravt.train.progress import ProgressLine, progress_line

LOGS = {
    "reward/total": 1.234,
    "reward/acc": 0.5,
    "reward/fmt": 0.64,
    "reward/anchor": 0.3,
    "reward/tool": 0.1,
    "tools/kappa": 0.21,
    "frames/k_mean": 16.0,
    "loss": 0.01,
}


def test_progress_line_names_every_term():
    line = progress_line(3, 10, LOGS, 12.34)
    assert line == (
        "step 3/10 · R 1.234 (acc 0.50 fmt 0.64 anchor 0.30 tool 0.10) · κ 0.21 · "
        "K 16.0 · loss 0.0100 · 12.3 s/step"
    )
    assert progress_line(1, 0, {}, None) == "step 1"


def test_progress_callback_prints_one_line_per_log_off_a_terminal(tmp_path):
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=200)
    ticks = iter([100.0, 110.0, 130.0])
    cb = ProgressLine(console, clock=lambda: next(ticks))
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[])
    state, control = TrainerState(), TrainerControl()
    state.max_steps = 4
    cb.on_train_begin(args, state, control)
    for step in (1, 3):  # 10 s for one step, then 20 s for two
        state.global_step = step
        cb.on_log(args, state, control, logs=LOGS)
    state.global_step = 3
    cb.on_log(args, state, control, logs={"train_runtime": 30.0})  # the end summary: no line
    cb.on_train_end(args, state, control)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 2 and lines == cb.lines
    assert lines[0].startswith("step 1/4 · R 1.234") and lines[0].endswith("10.0 s/step")
    assert lines[1].endswith("10.0 s/step") and "κ 0.21" in lines[1] and "\x1b[" not in lines[1]


def _runs(tmp_path):
    for name, fmt, acc in (("paragrpo", 0.6, 0.4), ("vanilla", 0.13, 0.3)):
        d = tmp_path / name
        d.mkdir()
        (d / "metrics.jsonl").write_text(
            "".join(
                json.dumps(
                    {"step": s, "reward/fmt": fmt, "tools/kappa": 0.2, "reward/acc": acc + 0.01 * s}
                )
                + "\n"
                for s in range(1, 6)
            )
        )
    return [str(tmp_path / "paragrpo"), str(tmp_path / "vanilla")]


def test_plot_any_metric_overlays_runs(tmp_path, capsys):
    runs = _runs(tmp_path)
    fig, _ = training_figure(runs, metrics=["reward/acc", "tools/kappa", "reward/fmt"])
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in axes] == ["reward/acc", "tools/kappa", "reward/fmt"]
    acc_lines = axes[0].get_lines()
    assert [line.get_label() for line in acc_lines] == ["paragrpo", "vanilla"]
    assert list(acc_lines[0].get_xdata()) == [1, 2, 3, 4, 5]
    assert list(acc_lines[1].get_ydata()) == pytest.approx([0.31, 0.32, 0.33, 0.34, 0.35])
    default, _ = training_figure(runs)  # the paper's figure stays the default
    assert [ax.get_title() for ax in default.axes] == ["format reward R_fmt", "tool-call rate κ"]
    out = tmp_path / "acc.png"
    assert main(["plot", *runs, "--out", str(out), "--metric", "reward/acc", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"] == ["reward/acc"]
    img = Image.open(out).convert("RGB")
    assert img.size[0] > 300 and len(img.getcolors(1 << 20)) > 10
    assert main(["plot", *runs, "--out", str(out), "--metric", "reward/nope"]) == 2
    err = capsys.readouterr().err
    assert "reward/nope" in err and "reward/acc" in err  # names what was logged
