"""The prepared runs' power and cost scripts, on the committed 3-seed runs (probes/power.py,
probes/cost.py).

Why: the 2 x 2 and the five-seed k comparison are to state each cell's smallest gap found with
80% power from their per-seed rows; the script that will do it is checked now on the runs that
exist, against the numbers the toy README states for them.
"""

from __future__ import annotations

import sys

import pytest
from repo_files import REPO

sys.path.insert(0, str(REPO / "experiments/toy_paradox/probes"))
import cost  # noqa: E402
import power  # noqa: E402

RESULTS = REPO / "experiments/toy_paradox/results"
PARADOX = {
    r: f"weak-{r}-s{{seed}}" for r in ("vanilla_grpo", "anchor_only", "gating_only", "paragrpo")
}


def test_the_paradox_cells_against_vanilla_match_the_readme():
    r = power.table(RESULTS / "paradox-3seeds", PARADOX, "vanilla_grpo", [0, 1, 2], ["acc_k4"], 5)
    gap = r["cells"]["paragrpo"]["acc_k4"]["minus_vanilla_grpo"]
    assert round(gap["detectable_paired"], 1) == 113.2  # "found with 80% power"
    assert [round(gap["welch"][k], 1) for k in ("lo", "hi")] == [-10.1, 133.4]
    assert not gap["difference"]
    planned = gap["detectable_paired_planned"]
    assert planned["seeds"] == 5 and planned["gap"] < gap["detectable_paired"]
    assert "minus_vanilla_grpo" not in r["cells"]["vanilla_grpo"]["acc_k4"]


def test_k2_against_k0_at_three_seeds_is_the_readmes_44_points():
    cells = {"k0": "weak-paragrpo-server-k0-s{seed}", "k2": "weak-paragrpo-server-k2-s{seed}"}
    r = power.table(RESULTS / "server-staleness-3seeds", cells, "k0", [0, 1, 2], ["acc_k4"], None)
    assert round(r["cells"]["k2"]["acc_k4"]["minus_k0"]["detectable_paired"], 1) == 43.5
    assert "k2" in power.markdown(r, "acc_k4")


def test_runs_not_there_yet_are_listed_and_left_out():
    cells = {**PARADOX, "gate_bare": "weak-gate_bare-s{seed}"}
    r = power.table(
        RESULTS / "paradox-3seeds", cells, "vanilla_grpo", [0, 1, 2, 3], ["acc_k4"], None
    )
    assert r["missing"]["gate_bare"] == [f"weak-gate_bare-s{s}" for s in range(4)]
    assert r["missing"]["paragrpo"] == ["weak-paragrpo-s3"] and not r["cells"]


def test_the_cost_of_a_plan_scales_with_runs_steps_and_cores():
    p = cost.paces([RESULTS / "paradox-3seeds"], r"rl-weak-")
    assert len(p["step_s"]) == 12 and min(p["step_s"]) > 0 and p["sft_s"]
    one = cost.plan(p, runs=5, steps=20, cores=1, lanes=1)["median"]
    two = cost.plan(p, runs=10, steps=20, cores=2, lanes=1)["median"]
    assert two["wall_hours"] == pytest.approx(2 * one["wall_hours"], rel=0.05)
    assert two["cpu_hours"] > 3 * one["cpu_hours"] - 1  # twice the runs, each on two cores
    with pytest.raises(SystemExit, match="no RL run matches"):
        cost.paces([RESULTS / "paradox-3seeds"], r"rl-strong-")


def _row(prediction: str) -> dict:
    sample = {"options": ["red", "blue", "green", "cyan"], "answer": "A", "meta": {"colour": "red"}}
    return {"id": "q", "prediction": prediction, "sample": sample, "score": {"correct": 1.0}}


def test_an_open_think_is_counted_and_kept_through_slim(tmp_path):
    """The k runs report answer turns left with a think open; slim.py removes results.jsonl, so
    the count is kept in answers.json and read back from there."""
    import json

    import staleness_compare
    from repo_files import load_repo_file

    closed = "<think>\nThe windows frames show a red square.\n</think>\n<answer>red</answer>"
    left_open = "<think>\n<answer>red</answer>"
    ev = tmp_path / "eval"
    ev.mkdir()
    (ev / "results.jsonl").write_text("\n".join(json.dumps(_row(p)) for p in (closed, left_open)))
    assert staleness_compare.open_thinks(ev) == 1
    slim = load_repo_file("experiments/toy_paradox/slim.py", "toy_slim_open_think")
    slim.slim(tmp_path)
    assert not (ev / "results.jsonl").exists()
    assert json.loads((ev / "answers.json").read_text())["open_think"] == 1
    assert staleness_compare.open_thinks(ev) == 1
    assert staleness_compare.open_thinks(tmp_path) is None
