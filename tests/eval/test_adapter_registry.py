"""A new benchmark is one file: its loader registers itself (``@register`` of
``paravt.eval.adapters``), and ``paravt eval --benchmark NAME`` runs it, with nothing else
edited. The adapter here is written the way a new file of ``eval/adapters/`` would be: a native
file layout (a CSV here), its own reader, its samples; it runs end to end through the CLI on a
generated video with a scripted model."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from paravt.cli.main import main
from paravt.data.questions import resolve_video
from paravt.errors import UserError
from paravt.eval.adapters import canonical_split, register, split_names, unregister
from paravt.eval.samples import EvalSample, LoadedSplit

LAYOUT = "DIR/tally.csv with columns video, question, first, second, answer (first|second)"


def load_tally(data: Path, videos: Path) -> LoadedSplit:
    """The test's benchmark: two-option questions in a CSV file."""
    path = data / "tally.csv"
    samples = []
    with path.open(newline="") as f:
        for n, row in enumerate(csv.DictReader(f), 1):
            samples.append(
                EvalSample(
                    id=f"tally-{n}",
                    split="tally",
                    video=str(resolve_video(videos, row["video"])),
                    question=row["question"],
                    question_type="mcq",
                    options=[row["first"], row["second"]],
                    answer="A" if row["answer"] == "first" else "B",
                    groups={"task": "count"},
                )
            )
    return LoadedSplit("tally", samples, [], [str(path)])


@pytest.fixture
def tally():
    register("tally", aliases=("tally-v1",), layout=LAYOUT)(load_tally)
    yield
    unregister("tally")


def test_a_registered_adapter_is_a_benchmark_of_paravt_eval(tally, gop_video, tmp_path, capsys):
    assert "tally" in split_names() and canonical_split("Tally-V1") == "tally"
    data = tmp_path / "tally"
    data.mkdir()
    with (data / "tally.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["video", "question", "first", "second", "answer"])
        writer.writerow([gop_video.stem, "How many squares?", "one", "two", "first"])
        writer.writerow([gop_video.name, "How many circles?", "none", "three", "second"])
    answers = {"tally-1": "A", "tally-2": "A"}  # right, then wrong
    script = {k: [f"<think>I count.</think><answer>{v}</answer>"] for k, v in answers.items()}
    (tmp_path / "script.json").write_text(json.dumps(script))
    code = main(
        ["eval", "--benchmark", "tally-v1", "--data", str(data), "--videos",
         str(gop_video.parent), "--backend", "scripted", "--script", str(tmp_path / "script.json"),
         "--frames", "2", "--out", str(tmp_path / "run"), "--json", "--set", "progress=false"]
    )  # fmt: skip
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["benchmark"] == "tally" and summary["metrics"]["n"] == 2
    assert summary["metrics"]["errors"] == 0
    assert summary["metrics"]["variants"]["robust"]["accuracy"] == pytest.approx(0.5)
    results = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    # the bare id found the generated video by its extension
    assert {r["sample"]["video"] for r in results} == {str(gop_video)}
    assert [len(r["overview_times"]) for r in results] == [2, 2]


def test_a_name_is_registered_once_and_is_gone_after_unregister(tally):
    with pytest.raises(ValueError, match="'tally' is registered already"):
        register("tally")(lambda data, videos: LoadedSplit("tally", []))
    with pytest.raises(ValueError, match="'tally-v1' is registered already"):
        register("other", aliases=("tally-v1",))(lambda data, videos: LoadedSplit("other", []))
    unregister("tally")
    assert "tally" not in split_names()
    with pytest.raises(UserError, match="unknown benchmark 'tally-v1'"):
        canonical_split("tally-v1")
    register("tally", aliases=("tally-v1",), layout=LAYOUT)(load_tally)  # for the fixture
