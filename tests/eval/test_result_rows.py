"""``ResultRow``: files written before it existed still read, merge, re-score and compare to the
same numbers; a row survives a write and a read unchanged, unknown keys included; every empty row
comes from one constructor."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from paravt.eval.compare import compare_runs
from paravt.eval.merge import merge_runs
from paravt.eval.rescore import rescore
from paravt.eval.results import (
    ResultError,
    ResultRow,
    ResultsFile,
    ResultsFileError,
    ToolUsage,
    read_results,
    write_results,
)
from paravt.schema.tools import ToolCounts

OLD = Path(__file__).parent / "data" / "results_v1"  # written by 5ed035b, before ResultRow


@pytest.fixture
def expected() -> dict:
    return json.loads((OLD / "expected.json").read_text())


@pytest.fixture
def old_run(tmp_path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    for f in OLD.glob("*-of-02.*"):
        shutil.copy(f, run / f.name)
    return run


def test_old_lines_read_as_rows_and_write_back_unchanged(tmp_path):
    for f in sorted(OLD.glob("results-*.jsonl")):
        rows = read_results(f)
        assert [r.to_dict() for r in rows] == [json.loads(x) for x in f.read_text().splitlines()]
        write_results(tmp_path / f.name, rows)
        assert (tmp_path / f.name).read_text() == f.read_text()  # byte for byte
    by_id = {r.id: r for f in OLD.glob("results-*.jsonl") for r in read_results(f)}
    assert (
        by_id["bad-options"].error.kind == "annotation" and by_id["bad-options"].status == "error"
    )
    assert by_id["no-video"].error == ResultError(
        "video_missing", "video not found: toy/videos/absent.mp4"
    )
    counts = ToolCounts(parseable_calls=1, executed_ok=1, errors=0, parse_errors=0)
    assert by_id["eval-00000-mcq"].tools == ToolUsage(counts, attempted=1, turns=2)
    assert by_id["eval-00000-mcq"].tools.to_dict() == {
        "executed": 1, "attempted": 1, "parseable": 1, "malformed": 0, "tool_errors": 0,
        "turns": 2,
    }  # fmt: skip
    assert by_id["eval-00000-mcq"].question_type == "mcq"


def test_old_shards_merge_rescore_and_compare_to_the_numbers_they_gave(old_run, tmp_path, expected):
    merged = merge_runs([old_run], tmp_path / "merged")
    for key, value in expected["merged"].items():
        assert merged[key] == value, key
    rows = read_results(tmp_path / "merged" / "results.jsonl")
    assert [r.index for r in rows] == sorted(r.index for r in rows) and len(rows) == 6

    alone = tmp_path / "only0"
    alone.mkdir()
    for f in old_run.glob("*-00-of-02.*"):
        shutil.copy(f, alone / f.name)
    partial = merge_runs([alone], tmp_path / "merged_partial", allow_missing=True)
    for key, value in expected["merged_partial"].items():
        assert partial[key] == value, key
    assert partial["metrics"]["error_kinds"]["missing"] == 3  # shard 1's three samples

    rescored = rescore(old_run / "results-00-of-02.jsonl", variant="paper")
    for key, value in expected["rescored_00"].items():
        assert rescored[key] == value, key

    cmp = compare_runs(
        [str(tmp_path / "merged"), str(tmp_path / "merged_partial")],
        baseline=str(tmp_path / "merged"),
    ).to_dict()
    rows = [{k: r[k] for k in ("name", "avg", "gain", "values")} for r in cmp["rows"]]
    assert {**{k: v for k, v in cmp.items() if k != "rows"}, "rows": rows} == expected["compare"]


def test_a_line_from_before_the_variants_and_the_attempted_count_reads_with_defaults(tmp_path):
    path = tmp_path / "results.jsonl"
    old = {"id": "a", "status": "error", "tools": {"executed": 1, "parseable": 3}, "note": "kept"}
    path.write_text(json.dumps(old) + "\n")
    (row,) = read_results(path)
    assert row.tools.attempted == 3  # the parseable count stands in
    assert row.error == ResultError("unknown", "") and row.scores == {} and row.index == 0
    assert row.score_for("paper") is row.score  # no stored variant: the robust score
    with ResultsFile(path) as w:  # rewritten, the unknown key is not lost
        w.append(row)
    assert json.loads(path.read_text().splitlines()[1])["note"] == "kept"


def test_a_line_that_is_not_a_result_names_its_line(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"id": "a"}\n{"id": "b", "tools": {"executed": "many"}}\n')
    with pytest.raises(ResultsFileError, match=r"results.jsonl:2: not a result line"):
        read_results(path)
    path.write_text('{"id": "a"}\n["b"]\n')
    with pytest.raises(ResultsFileError, match=r":2: a result line is a JSON object"):
        read_results(path)


def test_a_failed_row_is_scored_zero_and_counted():
    row = ResultRow.failed("x", 4, "mlvu", "video_missing", "gone", {"question_type": "mcq"})
    assert row.status == "error" and row.prediction is None and row.tools == ToolUsage()
    line = row.to_dict()
    assert line["error"] == {"kind": "video_missing", "message": "gone"} and "subtitles" not in line
