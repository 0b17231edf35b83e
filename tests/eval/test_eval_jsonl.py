"""The generic JSON-lines split: rows in the documented shape, bad rows skipped and counted,
unusable gold kept as an annotation error, and a toy split evaluated end to end via the CLI."""

from __future__ import annotations

import json

import pytest

from paravt.cli.main import main
from paravt.eval.adapters import load_split
from paravt.eval.adapters._files import AnnotationError
from paravt.toy.generate import make_toy_task
from paravt.toy.task import ToyTaskConfig


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))


def test_rows_gold_forms_and_skips(tmp_path):
    _write(
        tmp_path / "eval.jsonl",
        [
            {
                "id": "q1",
                "video": "a.mp4",
                "question": "Colour?",
                "options": ["A. red", "B. blue"],
                "answer": "blue",
                "question_type": "mcq",
                "duration_group": "short",
                "task_type": "colour",
            },
            {"video": "a.mp4", "question": "Which?", "options": ["x", "y", "z"], "answer": 2},
            {
                "id": "q3",
                "video": "/abs/b.mp4",
                "question": "When?",
                "answer": "1:05 - 1:10",
                "question_type": "tvg",
            },
            {
                "id": "q4",
                "video": "a.mp4",
                "question": "Which?",
                "options": ["x", "y"],
                "answer": "E",
            },
            {
                "id": "q5",
                "video": "a.mp4",
                "question": "What?",
                "answer": "a cat",
                "question_type": "oe",
            },
            [1, 2],
            {"id": "q7", "question": "no video"},
            {"id": "q8", "video": "a.mp4", "question": " "},
            {
                "id": "q9",
                "video": "a.mp4",
                "question": "Q?",
                "question_type": "caption",
                "answer": "x",
            },
            {
                "id": "q10",
                "video": "a.mp4",
                "question": "When?",
                "answer": [5, 2],
                "question_type": "tvg",
            },
            '{"id": "q11", "video": "a.mp4", "question": "torn',  # not JSON: skipped too
        ],
    )
    _write(tmp_path / "train.jsonl", [])
    split = load_split("jsonl", tmp_path, tmp_path / "vids")
    got = {s.id: s for s in split.samples}
    assert [r for r, _ in split.skipped] == [
        "eval.jsonl:6",
        "eval.jsonl:7",
        "eval.jsonl:8",
        "eval.jsonl:9",
        "eval.jsonl:11",
    ]
    assert split.skipped[-1][1].startswith("not JSON (")
    assert split.ignored == [str(tmp_path / "train.jsonl")]  # beside it, not read: named
    assert got["q1"].answer == "B" and got["q1"].options == ["red", "blue"]
    assert got["q1"].groups == {"duration": "short", "task": "colour"}
    assert got["q1"].video == str(tmp_path / "vids" / "a.mp4")
    assert got["eval-2"].answer == "C" and got["eval-2"].question_type == "mcq"
    assert got["q3"].answer == [65.0, 70.0] and got["q3"].video == "/abs/b.mp4"
    assert got["q4"].problem and "not one of the option" in got["q4"].problem
    assert got["q5"].answer == "a cat" and got["q5"].problem is None
    assert got["q10"].problem and "end > start" in got["q10"].problem


def test_which_file_a_folder_means(tmp_path):
    _write(tmp_path / "a.jsonl", [])
    _write(tmp_path / "b.jsonl", [])
    with pytest.raises(AnnotationError, match="cannot tell which rows file"):
        load_split("jsonl", tmp_path, tmp_path)
    assert load_split("jsonl", tmp_path / "b.jsonl", tmp_path).sources == [
        str(tmp_path / "b.jsonl")
    ]


def test_toy_split_end_to_end_through_the_cli(tmp_path, capsys):
    out = tmp_path / "toy"
    make_toy_task(ToyTaskConfig(out=str(out), n=2, seed=5, split="eval", visibility_videos=0))
    rows = [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()]
    script = {}
    for r in rows:  # the right answer for the first video, a wrong one for the second
        right = r["id"].startswith("eval-00000")
        if r["question_type"] == "mcq":
            answer = r["answer"] if right else next(ch for ch in "ABCD" if ch != r["answer"])
        else:
            s, e = r["answer"] if right else (0.0, 1.0)
            answer = f"[{s}, {e}]"
        script[r["id"]] = [f"<think>I read the frames.</think><answer>{answer}</answer>"]
    (tmp_path / "script.json").write_text(json.dumps(script))
    code = main(
        [
            "eval",
            "--benchmark",
            "jsonl",
            "--data",
            str(out),
            "--videos",
            str(out),
            "--backend",
            "scripted",
            "--script",
            str(tmp_path / "script.json"),
            "--frames",
            "4",
            "--out",
            str(tmp_path / "run"),
            "--json",
            "--set",
            "progress=false",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    metrics = summary["metrics"]
    assert metrics["n"] == 4 and metrics["errors"] == 0 and summary["skipped_rows"] == []
    bench = metrics["variants"]["benchmark"]
    assert bench["accuracy"] == pytest.approx(0.5) and bench["miou"] == pytest.approx(0.5)
    assert metrics["by_group"]["task"]["toy_mcq"]["accuracy"] == pytest.approx(0.5)
    results = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert all(len(r["overview_times"]) == 4 for r in results)


def test_a_question_with_more_options_than_letters_is_its_own_error(tmp_path, capsys):
    """One unletterable question is an ``annotation`` error in the denominator; the run goes on."""
    out = tmp_path / "toy"
    make_toy_task(
        ToyTaskConfig(
            out=str(out), n=2, seed=5, split="eval", visibility_videos=0, question_types=["mcq"]
        )
    )
    rows = [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()]
    rows[1]["options"] = [f"colour {i}" for i in range(11)]
    rows[1]["answer"] = "A"
    _write(out / "eval.jsonl", rows)
    script = {r["id"]: [f"<answer>{r['answer']}</answer>"] for r in rows}
    (tmp_path / "script.json").write_text(json.dumps(script))
    argv = ["eval", "--benchmark", "jsonl", "--data", str(out), "--videos", str(out)]
    argv += ["--backend", "scripted", "--script", str(tmp_path / "script.json"), "--frames", "4"]
    argv += ["--out", str(tmp_path / "run"), "--json", "--set", "progress=false"]
    assert main(argv) == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    assert metrics["n"] == 2 and metrics["errors"] == 1
    results = [json.loads(x) for x in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    bad = next(r for r in results if r["id"] == rows[1]["id"])
    assert bad["status"] == "error" and bad["error"]["kind"] == "annotation"
    assert "letter" in bad["error"]["message"].lower()


def test_the_live_line_the_groups_and_the_headline_count_the_same_questions(tmp_path):
    """Every multiple-choice answer right, every grounding answer wrong (IoU 0): accuracy is
    100% in the live line, in every group and in the headline; the grounding questions are in
    mIoU only, and the summary says how many questions each counts. (The live line and the
    groups read 50% here, the headline 100%.)"""
    from paravt.eval.config import EvalConfig
    from paravt.eval.runner import Runner

    out = tmp_path / "toy"
    make_toy_task(ToyTaskConfig(out=str(out), n=2, seed=5, split="eval", visibility_videos=0))
    rows = [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()]
    script = {
        r["id"]: [f"<answer>{r['answer'] if r['question_type'] == 'mcq' else '[0, 1]'}</answer>"]
        for r in rows
    }
    (tmp_path / "script.json").write_text(json.dumps(script))
    cfg = EvalConfig(benchmark="jsonl", data=str(out), videos=str(out), out=str(tmp_path / "run"),
                     script=str(tmp_path / "script.json"), progress=False)  # fmt: skip
    cfg.engine.frames = 2
    lines: list[str] = []
    summary = Runner(cfg, progress=lambda event, running, **_: lines.append(running.text())).run()
    m = summary["metrics"]
    assert m["denominators"] == {"accuracy": 2, "grounding": 2}
    assert m["variants"]["robust"]["accuracy"] == 1.0 and m["variants"]["robust"]["miou"] == 0.0
    assert lines[-1].startswith("acc 100.0%  mIoU   0.0% (2 scored, 2 grounding)")
    for groups in m["by_group"].values():
        for name, g in groups.items():
            if g["n"]:
                assert g["accuracy"] == 1.0, (name, g)
            assert g.get("miou", 0.0) == 0.0
    assert m["by_group"]["task"]["toy_tvg"] == {
        "n": 0, "correct": 0, "accuracy": None, "grounding_n": 2, "miou": 0.0
    }  # fmt: skip
