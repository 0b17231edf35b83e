"""One question-row schema: the same JSON lines read by ``paravt infer -q -``, ``paravt eval
--benchmark jsonl`` and training give the same questions (type, options, text) under one set of
defaults (``paravt.data.questions``). Before, training read a row without options or type as
mcq, eval skipped it and infer read it as oe; option prefixes were removed by eval only."""

from __future__ import annotations

import io
import json

import pytest

from paravt.cli.cmd_infer import _stdin_questions
from paravt.data.questions import RowError, parse_question
from paravt.data.rows import read_rows
from paravt.errors import UserError
from paravt.eval.adapters import load_split

ROWS = [
    {"id": "colour", "question": "Colour?", "options": ["A. red", "(B) blue"], "answer": "blue"},
    {"id": "what", "question": "<video>\nWhat happens?", "answer": "a cat"},
    {"id": "when", "question": "When?", "type": "TVG", "answer": "0:02 - 0:05"},
    {"id": "inline", "question": "Which? A. red B. blue", "question_type": "mcq", "answer": "B"},
    {"id": "auto", "question": "Pick one", "question_type": "auto", "options": ["x", "y"],
     "answer": 1},
]  # fmt: skip
EXPECTED = {  # id -> (type, options, question)
    "colour": ("mcq", ["red", "blue"], "Colour?"),
    "what": ("oe", None, "What happens?"),
    "when": ("tvg", None, "When?"),
    "inline": ("mcq", None, "Which? A. red B. blue"),
    "auto": ("mcq", ["x", "y"], "Pick one"),
}


def _as_read(q) -> tuple:
    return (q.question_type, q.options or None, q.question)


def test_infer_eval_and_training_read_one_row_alike(gop_video, tmp_path, monkeypatch):
    lines = [{**r, "video": gop_video.name} for r in ROWS]
    path = tmp_path / "eval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))

    monkeypatch.setattr("sys.stdin", io.StringIO(path.read_text()))
    infer = {q.id: _as_read(q) for q in _stdin_questions(str(gop_video), "auto")}
    split = load_split("jsonl", path, gop_video.parent)
    evaluated = {s.id: _as_read(s) for s in split.samples}
    train = {r.id: _as_read(r) for r in read_rows(path, gop_video.parent).rows}
    assert infer == evaluated == train == EXPECTED
    # the gold, where each reader keeps it: eval normalises it, training keeps it as written
    assert {s.id: s.answer for s in split.samples} == {
        "colour": "B", "what": "a cat", "when": [2.0, 5.0], "inline": "B", "auto": "B"
    }  # fmt: skip
    assert {s.id: s.video for s in split.samples} == dict.fromkeys(EXPECTED, str(gop_video))


def test_a_row_that_is_not_a_question_is_refused_by_each_reader_its_way(tmp_path, monkeypatch):
    bad = [
        ({"question": "  "}, "no question given"),
        ({"question": "Q?", "options": "red, blue"}, "options must be a list"),
        ({"question": "Q?", "question_type": "essay"}, "question_type 'essay' is not one of"),
        ({"question": "Q?", "frames": 0}, '"frames" must be a positive integer'),
        (["Q?"], "not a JSON object"),
    ]
    for row, why in bad:
        with pytest.raises(RowError, match=why):
            parse_question(row)
    path = tmp_path / "eval.jsonl"
    path.write_text("".join(json.dumps(r if isinstance(r, list) else {**r, "video": "v.mp4"}) + "\n"
                            for r, _ in bad))  # fmt: skip
    # eval and training skip each row with its reason; infer stops at the first, naming its line
    skipped = load_split("jsonl", path, tmp_path).skipped
    assert [why in reason for (_, reason), (_, why) in zip(skipped, bad, strict=True)] == [True] * 5
    reasons = [s.reason for s in read_rows(path, tmp_path).skipped]
    assert [why in reason for reason, (_, why) in zip(reasons, bad, strict=True)] == [True] * 5
    monkeypatch.setattr("sys.stdin", io.StringIO(path.read_text()))
    with pytest.raises(UserError, match="stdin line 1: no question given"):
        _stdin_questions("v.mp4", "auto")


def test_a_gold_that_cannot_be_used_is_eval_s_annotation_error_and_a_training_skip(tmp_path):
    rows = [{"id": "e", "video": "v.mp4", "question": "Q?", "options": ["x", "y"], "answer": "E"},
            {"id": "none", "video": "v.mp4", "question": "Q?", "options": ["x", "y"]}]  # fmt: skip
    path = tmp_path / "eval.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    problems = {s.id: s.problem for s in load_split("jsonl", path, tmp_path).samples}
    assert "not one of the option letters" in problems["e"]
    assert problems["none"] == "no answer given"
    skipped = read_rows(path, tmp_path).skipped
    assert [(s.id, s.reason) for s in skipped] == [
        ("e", problems["e"]),
        ("none", "no answer given"),
    ]
