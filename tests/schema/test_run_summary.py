"""A training run's summary.json is one type, written and read back through it; a summary
written before the type existed (the same keys, a ``data`` section) loads unchanged."""

from __future__ import annotations

import json

import pytest

from paravt.errors import UserError
from paravt.schema.run_summary import RunSummary

#: summary.json as paravt train wrote it before RunSummary (a run of 2 steps, not resumed)
OLD = {
    "run_dir": "runs/a",
    "global_step": 2,
    "final_model": "runs/a/final",
    "resumed_from": None,
    "data": {"rows": 4, "skipped": 0},
    "train_loss": 0.25,
    "metrics_file": "runs/a/metrics.jsonl",
}


def test_an_older_summary_loads_and_writes_back_the_same_json():
    summary = RunSummary.from_json(json.loads(json.dumps(OLD)))
    assert (summary.global_step, summary.train_loss, summary.extra) == (
        2,
        0.25,
        {"data": OLD["data"]},
    )
    assert json.dumps(summary.to_json()) == json.dumps(OLD)  # the same keys, in the same order


def test_a_file_that_is_not_a_summary_is_one_named_error():
    with pytest.raises(
        UserError, match=r"runs/b/summary.json: not a training summary \(no global_step"
    ):
        RunSummary.from_json({"run_dir": "runs/b", "final_model": "x", "metrics_file": "m"},
                             "runs/b/summary.json")  # fmt: skip
