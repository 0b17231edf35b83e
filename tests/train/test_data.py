"""Training rows: parquet / JSONL parsing, video checks, skip report."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from paravt.data import load_training_rows, read_rows, to_dataset
from paravt.errors import UserError


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_jsonl_rows_resolve_against_video_root_and_bad_rows_are_skipped(tmp_path, shared_videos):
    p = _jsonl(
        tmp_path / "d.jsonl",
        [
            {
                "id": "a",
                "video": "torchcodec__testsrc2.mp4",
                "question": "Q?",
                "options": ["x", "y"],
                "answer": "A",
                "question_type": "mcq",
            },
            {
                "id": "b",
                "video": "torchcodec__testsrc2.mp4",
                "question": "Q?",
                "answer": [1, 2],
                "question_type": "tvg",
            },
            {
                "id": "c",
                "video": "x.mp4",
                "question": "Q?",
                "answer": "A",
                "question_type": "essay",
            },
            {"id": "d", "question": "Q?", "answer": "A"},
        ],
    )
    res = read_rows(p, shared_videos)
    assert [r.id for r in res.rows] == ["a", "b"]
    assert res.rows[0].video == str(shared_videos / "torchcodec__testsrc2.mp4")
    assert res.rows[1].answer == [1, 2] and res.rows[1].options is None
    assert {s.id: s.reason.split()[0] for s in res.skipped} == {"c": "question_type", "d": "no"}


def test_parquet_paravt_layout(tmp_path, shared_videos):
    table = pa.table(
        {
            "prompt": [[{"role": "user", "content": "<video>\nWhat is cooked? A. pancake B. egg"}]],
            "videos": [[str(shared_videos / "decord__flipping_a_pancake.mkv")]],
            "extra_info": [{"answer": "A", "question_type": "mcq"}],
        }
    )
    path = tmp_path / "d.parquet"
    pq.write_table(table, path)
    res = read_rows(path)
    assert len(res.rows) == 1
    assert (
        res.rows[0].question.startswith("What is cooked?") and "<video>" not in res.rows[0].question
    )
    ds = to_dataset(res.rows)
    assert ds[0]["prompt_id"] == "row0" and json.loads(ds[0]["answer_json"]) == "A"


def test_missing_and_corrupt_videos_are_skipped_and_reported(tmp_path, shared_videos):
    rows = [
        {
            "id": f"r{i}",
            "video": "torchcodec__testsrc2.mp4",
            "question": "Q?",
            "answer": "A",
            "question_type": "mcq",
            "options": ["a", "b"],
        }
        for i in range(8)
    ]
    rows.append(
        {
            "id": "gone",
            "video": "nope/missing.mp4",
            "question": "Q?",
            "answer": "A",
            "question_type": "mcq",
        }
    )
    rows.append(
        {
            "id": "empty",
            "video": str(tmp_path / "empty.mp4"),
            "question": "Q?",
            "answer": "A",
            "question_type": "mcq",
        }
    )
    (tmp_path / "empty.mp4").write_bytes(b"not a video at all")
    good, report = load_training_rows(_jsonl(tmp_path / "d.jsonl", rows), shared_videos)
    assert len(good) == 8 and report.kept == 8 and report.total == 10
    assert {s.id for s in report.skipped} == {"gone", "empty"}
    report.write(tmp_path / "run")
    listed = [
        json.loads(line)
        for line in (tmp_path / "run" / "skipped_rows.jsonl").read_text().splitlines()
    ]
    assert {r["id"] for r in listed} == {"gone", "empty"}


def test_no_usable_rows_is_a_user_error(tmp_path):
    p = _jsonl(tmp_path / "d.jsonl", [{"video": "missing.mp4", "question": "Q", "answer": "A"}])
    with pytest.raises(UserError, match="no usable training rows"):
        load_training_rows(p, tmp_path)
    with pytest.raises(UserError, match="not found"):
        read_rows(tmp_path / "nothing.jsonl")


def test_no_usable_rows_still_lists_the_skipped_rows_in_the_run_folder(tmp_path, shared_videos):
    from paravt.train.run import load_command_config, run_training

    p = _jsonl(
        tmp_path / "d.jsonl",
        [
            {"id": "a", "video": "missing.mp4", "question": "Q", "answer": "A"},
            {"id": "b", "video": "gone/too.mp4", "question": "Q", "answer": "A"},
        ],
    )
    run_dir = tmp_path / "run"
    cfg = load_command_config(
        "cpu-smoke", (f"output_dir={run_dir}", f"data.path={p}", f"data.video_root={tmp_path}")
    )
    with pytest.raises(UserError, match="skipped_rows.jsonl"):
        run_training(cfg)
    listed = [json.loads(x) for x in (run_dir / "skipped_rows.jsonl").read_text().splitlines()]
    assert [r["id"] for r in listed] == ["a", "b"]
    assert json.loads((run_dir / "data_report.json").read_text())["kept"] == 0


def test_limit_keeps_the_first_rows_of_the_file_and_reports_exactly_those(tmp_path, shared_videos):
    good_row = {
        "video": "torchcodec__testsrc2.mp4",
        "question": "Q?",
        "answer": "A",
        "question_type": "mcq",
        "options": ["x", "y"],
    }
    lines = [
        json.dumps({**good_row, "id": "r0"}),
        "{not json",  # row 1: rejected by the parser
        json.dumps({**good_row, "id": "r2", "video": "missing.mp4"}),  # row 2: no such video
        json.dumps({**good_row, "id": "r3"}),
        "{also not json",  # row 4: beyond the limit, must not be counted
        json.dumps({**good_row, "id": "r5", "video": "missing.mp4"}),  # row 5: beyond the limit
    ]
    p = tmp_path / "d.jsonl"
    p.write_text("\n".join(lines) + "\n")
    good, report = load_training_rows(p, shared_videos, limit=4, report_dir=tmp_path / "run")
    assert [r.id for r in good] == ["r0", "r3"]
    assert report.total == 4 and report.kept == 2
    assert [s.index for s in report.skipped] == [1, 2]
    assert json.loads((tmp_path / "run" / "data_report.json").read_text())["rows"] == 4
    _, everything = load_training_rows(p, shared_videos)
    assert everything.total == 6 and len(everything.skipped) == 4


def test_a_row_with_more_options_than_letters_is_skipped_with_its_reason(tmp_path, shared_videos):
    row = {"video": "torchcodec__testsrc2.mp4", "question": "Q?", "answer": "A"}
    p = _jsonl(
        tmp_path / "d.jsonl",
        [
            {**row, "id": "ten", "options": [str(i) for i in range(10)]},
            {**row, "id": "eleven", "options": [str(i) for i in range(11)]},
        ],
    )
    res = read_rows(p, shared_videos)
    assert [r.id for r in res.rows] == ["ten"]
    assert [(s.id, s.reason.split(";")[0]) for s in res.skipped] == [
        ("eleven", "row 'eleven' has 11 options")
    ]


def test_a_data_file_one_rank_cannot_parse_stops_every_rank_after_the_gather(tmp_path):
    """A truncated parquet file raises pyarrow's own error, not a UserError; it must still reach
    the gather, or the ranks that read the file wait there for this one forever."""
    from paravt.data import Split

    bad = tmp_path / "train.parquet"
    bad.write_bytes(b"PAR1 truncated")
    gathered = []

    def gather(objs):  # this rank (0) and a rank 1 that read its copy of the file fine
        gathered.append(objs[0])
        return [objs[0], None]

    with pytest.raises(UserError, match="rank 0: cannot read .*train.parquet"):
        load_training_rows(bad, split=Split(rank=0, world=2, gather=gather))
    assert len(gathered) == 1 and gathered[0]


def test_a_user_template_without_options_is_refused_before_the_model_loads(tmp_path, shared_videos):
    """Every training row is checked against ``engine.user_template`` when the run starts, not
    when the first mcq row reaches a rollout (on one rank, steps in)."""
    from paravt.agent.prompts import UserTemplateError
    from paravt.train.run import load_command_config, run_training

    rows = [
        {"id": "t", "video": "torchcodec__testsrc2.mp4", "question": "When?", "answer": [1, 2]},
        {
            "id": "m",
            "video": "torchcodec__testsrc2.mp4",
            "question": "Which?",
            "options": ["x", "y"],
            "answer": "A",
        },
    ]
    p = _jsonl(tmp_path / "d.jsonl", rows)
    template = tmp_path / "user.txt"
    template.write_text("${question}\n${instruction}\n")
    run_dir = tmp_path / "run"
    cfg = load_command_config(
        "cpu-smoke",
        (
            f"output_dir={run_dir}",
            f"data.path={p}",
            f"data.video_root={shared_videos}",
            f"engine.user_template={template}",
        ),
    )
    built = []
    with pytest.raises(UserTemplateError, match="'m' has options"):
        run_training(cfg, on_trainer=built.append)
    assert built == []  # refused before the trainer (and the policy) was built
