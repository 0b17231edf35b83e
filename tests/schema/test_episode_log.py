"""The training dump row is one type the trainer writes and the viewer reads back: a row round
trips through its JSON, a row written before ``frames_dropped`` existed still loads, and a line
that is not a dump row is one note naming the file and the row, not a crash."""

from __future__ import annotations

import json

import pytest

from paravt.errors import UserError
from paravt.schema.episode_log import DumpRow, StoredFrame
from paravt.viewer.runs import load_run

RECORD = {"id": "q1", "question": "What colour?", "question_type": "mcq", "turns": [{"text": "B"}]}


def test_a_row_round_trips_through_its_json():
    row = DumpRow(3, 1, RECORD, k=8, advantage=0.5, reward={"acc": 1.0},
                  frames=[StoredFrame("tool", 2.5, "s3-r1-e0-0.jpg")], frames_dropped=2)  # fmt: skip
    assert DumpRow.from_json(json.loads(json.dumps(row.to_json()))) == row


def test_an_older_row_without_frames_loads_with_defaults():
    old = {"step": 2, "rank": 0, "k": 4, "advantage": None, "reward": None, "record": RECORD}
    row = DumpRow.from_json(old)
    assert (row.frames, row.frames_dropped, row.reward) == ([], 0, None)


@pytest.mark.parametrize(
    ("line", "says"),
    [({"step": 1}, "no episode record"), ({"step": "x", "record": RECORD}, "must be integers")],
)
def test_a_line_that_is_not_a_dump_row_is_a_named_error(line, says):
    with pytest.raises(UserError, match=f"dump-rank0.jsonl row 2: .*{says}"):
        DumpRow.from_json(line, "dump-rank0.jsonl row 2")


def test_the_viewer_reads_a_run_through_the_type(tmp_path):
    folder = tmp_path / "run" / "episodes"
    folder.mkdir(parents=True)
    good = DumpRow(
        5, 0, RECORD, k=6, reward={"acc": 0.0}, frames=[StoredFrame("overview", 0.0, "a.jpg")]
    )
    lines = [json.dumps(good.to_json()), json.dumps({"step": 5, "rank": 0, "record": "torn"})]
    (folder / "dump-rank0.jsonl").write_text("\n".join(lines) + "\n")
    run = load_run(tmp_path / "run")
    assert [ep["id"] for ep in run.episodes] == ["q1"]
    ep = run.episodes[0]
    assert (ep["step"], ep["k"], ep["correct"]) == (5, 6, 0.0)
    assert ep["stored_frames"] == [{"source": "overview", "time": 0.0, "file": "a.jpg"}]
    assert run.notes == [
        "dump-rank0.jsonl: skipped row 2: no episode record ('record' is not a JSON object)"
    ]
