"""The toy experiment's ``--data-seed``: a rebuild on other data changes the training draws only.

Why: the rebuild spread (experiments/toy_paradox/README.md, "Six builds") compares builds on one
eval split; a data seed that moved the eval videos would mix a data effect into the spread.
"""

from __future__ import annotations

import copy

from repo_files import load_repo_file


def _run_module():
    return load_repo_file("experiments/toy_paradox/run", "toy_paradox_run")


def test_data_seed_zero_is_the_chain_as_it_always_ran():
    run = _run_module()
    settings = run.SETTINGS["quick"]
    got, stages = run.data_seeded(settings, run.WARMUP, 0)
    assert got is settings and stages is run.WARMUP


def test_a_data_seed_draws_training_and_warm_up_data_and_keeps_the_eval_split():
    run = _run_module()
    settings, warmup = run.SETTINGS["quick"], run.WARMUP
    before = copy.deepcopy((settings, warmup))
    got, stages = run.data_seeded(settings, warmup, 2)
    assert got["task"]["train_seed"] == 2 and got["data_seed"] == 2
    assert got["task"]["seed"] == settings["task"]["seed"] == 0  # the eval split's seed
    assert {k: w["seed"] for k, w in stages.items()} == {
        k: w["seed"] + 20 for k, w in warmup.items()
    }
    assert (settings, warmup) == before  # the module's tables are not changed
    assert got["sft"] == settings["sft"] and got["rl"] == settings["rl"]
