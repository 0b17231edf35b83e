"""`paravt eval report`: runs side by side, the relative gain over a baseline, bad folders."""

from __future__ import annotations

import csv
import io
import json

import pytest

from paravt.backends.scripted import ScriptedBackend
from paravt.cli.main import main
from paravt.config import load_config
from paravt.eval.compare import compare_runs
from paravt.eval.config import EvalConfig
from paravt.eval.report import format_comparison, summary_table
from paravt.eval.runner import run_eval


def _summary(split: str, value: float, wall: float = 10.0) -> dict:
    headline = "miou" if split == "charades" else "accuracy"
    variant = {"headline": headline, "value": value, headline: value}
    if split == "charades":
        variant["r@0.5"] = value / 2
    return {
        "benchmark": split,
        "timing": {"wall_s": wall},
        "metrics": {"variants": {"robust": variant, "benchmark": variant, "paper": variant}},
    }


def _run(root, name: str, values: dict) -> str:
    for split, v in values.items():
        d = root / name / split
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps(_summary(split, v)))
    return str(root / name)


def test_relative_gain_on_a_hand_computed_pair(tmp_path):
    base = _run(tmp_path, "qwen3vl", {"lvbench": 0.40, "charades": 0.50})
    mine = _run(tmp_path, "paravt", {"lvbench": 0.44, "charades": 0.52})
    cmp = compare_runs([base, mine], baseline="qwen3vl")
    # lvbench: (0.44 - 0.40) / 0.40 = +10 %; charades mIoU: (0.52 - 0.50) / 0.50 = +4 %; mean +7 %
    rows = {r.name: r for r in cmp.rows}
    assert rows["paravt"].gain == pytest.approx(0.07)
    assert rows["qwen3vl"].gain == pytest.approx(0.0)
    assert rows["paravt"].avg == pytest.approx(0.48) and rows["paravt"].wall_s == 20.0
    assert cmp.columns == [("charades", "miou"), ("charades", "r@0.5"), ("lvbench", "accuracy")]
    md = format_comparison(cmp, "markdown").splitlines()
    assert md[0] == (
        "| run | charades miou | charades r@0.5 | lvbench accuracy | avg | gain vs qwen3vl |"
    )
    assert md[3] == "| paravt | 52.0 | 26.0 | 44.0 | 48.0 | +7.0% |"
    latex = format_comparison(cmp, "latex")
    assert r"\toprule" in latex and r"paravt & 52.0 & 26.0 & 44.0 & 48.0 & +7.0\% \\" in latex
    rows_csv = list(csv.DictReader(io.StringIO(format_comparison(cmp, "csv"))))
    assert float(rows_csv[1]["gain"]) == pytest.approx(0.07)
    assert float(rows_csv[1]["lvbench/accuracy"]) == pytest.approx(0.44)


def test_a_baseline_outside_the_list_becomes_the_first_row(tmp_path, capsys):
    base = _run(tmp_path, "base", {"lvbench": 0.5})
    mine = _run(tmp_path, "mine", {"lvbench": 0.6})
    assert main(["eval", "report", mine, "--baseline", base, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in doc["rows"]] == ["base", "mine"]
    assert doc["rows"][1]["gain"] == pytest.approx(0.2)


def test_report_bad_input_exits_2_naming_the_folder_or_split(tmp_path, capsys):
    not_a_run = tmp_path / "photos"
    not_a_run.mkdir()
    ok = _run(tmp_path, "ok", {"lvbench": 0.5, "mlvu": 0.4})
    assert main(["eval", "report", ok, str(not_a_run)]) == 2
    err = capsys.readouterr().err
    assert "photos is not an eval run" in err
    other = _run(tmp_path, "other", {"lvbench": 0.5})
    assert main(["eval", "report", ok, other]) == 2
    err = capsys.readouterr().err
    assert "different splits" in err and "lacks mlvu" in err and "other" in err
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "summary.json").write_text("{}")
    assert main(["eval", "report", str(tmp_path / "broken")]) == 2
    assert "not an eval summary" in capsys.readouterr().err


def test_report_of_real_runs_and_the_end_of_run_table(videomme, tmp_path, capsys):
    """Two real runs of one split (scripted answers): 1 of 4 right, then 2 of 4 right."""
    from rich.console import Console

    data, videos = videomme
    scripts = {
        "weak": {"001-1": ["<answer>A</answer>"], "001-2": ["<answer>B</answer>"]},
        "strong": {"001-1": ["<answer>B</answer>"], "001-2": ["<answer>B</answer>"]},
    }
    for name, script in scripts.items():
        base = {
            "benchmark": "videomme",
            "data": str(data),
            "videos": str(videos),
            "out": str(tmp_path / name),
            "progress": False,
            "engine": {"frames": 2, "max_turns": 1},
        }
        summary = run_eval(
            load_config(EvalConfig, None, [], base=base), backend=ScriptedBackend(script)
        )
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(summary_table(summary))
    text = console.export_text()
    assert "accuracy by duration" in text and "accuracy by task" in text
    assert "executed" in text and "attempted" in text and "wall time" in text
    assert (
        main(
            [
                "eval",
                "report",
                str(tmp_path / "weak"),
                str(tmp_path / "strong"),
                "--baseline",
                "weak",
                "--format",
                "csv",
            ]
        )
        == 0
    )
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["run"] for r in rows] == ["weak", "strong"]
    assert float(rows[1]["videomme/accuracy"]) == pytest.approx(0.5)
    assert float(rows[1]["gain"]) == pytest.approx(1.0)  # 0.25 → 0.5
