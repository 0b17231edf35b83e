"""The toy experiment's ``--data-seed``: a rebuild on other data changes the training draws only.

Why: the rebuild spread (experiments/toy_paradox/LOG.md, "Six builds") compares builds on one
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


def test_select_keeps_the_quick_chains_model_among_its_candidates():
    """--select trains the tool SFT on past the quick chain's 90 steps: with a learning rate that
    is constant after its warm-up and a data order that does not depend on max_steps, steps
    1-90 are the quick chain's own, and step 90 is a saved candidate."""
    import yaml

    run = _run_module()
    s, _ = run.run_settings("quick", None, "average", 0)
    quick = run.SETTINGS["quick"]["sft"]["strong"]["max_steps"]
    sel = s["select"]
    assert s["sft"]["strong"]["max_steps"] == sel["max_steps"] > quick
    assert sel["from_step"] <= quick and quick % sel["every"] == 0
    recipe = yaml.safe_load((run.RECIPES / "sft-toy.yaml").read_text())
    assert recipe["trainer"]["lr_scheduler_type"] == "constant_with_warmup"
    assert s["sft_trainer"]["warmup_steps"] < sel["from_step"]
    unchanged, _ = run.run_settings("quick", None, None, 0)
    assert "select" not in unchanged and unchanged["sft"] == run.SETTINGS["quick"]["sft"]


def test_the_chosen_checkpoint_has_the_best_validation_accuracy_and_the_earliest_step_on_a_tie():
    run = _run_module()
    scored = [{"step": n, "val_accuracy": a} for n, a in [(90, 0.9), (105, 0.97), (120, 0.97)]]
    assert run.chosen_step(scored) == 105
    assert run.chosen_step(scored[:1]) == 90


def test_average_is_the_mean_of_the_candidate_checkpoints_weights(tmp_path):
    """--average: the SFT model is the candidates' weights averaged (steps 90, 105; step 60 is
    before SELECT's from_step, 100 not on its grid), with the last candidate's other files and
    none of the trainer's state."""
    import torch
    from safetensors.torch import load_file, save_file

    run = _run_module()
    folder = tmp_path / "runs" / "sft-strong"
    for step, value in [(60, 100.0), (90, 1.0), (100, 50.0), (105, 2.0)]:
        ckpt = folder / f"checkpoint-{step}"
        ckpt.mkdir(parents=True)
        save_file({"w": torch.full((2,), value)}, str(ckpt / "model.safetensors"))
        (ckpt / "config.json").write_text(f'{{"step": {step}}}')
        (ckpt / "optimizer.pt").write_bytes(b"state")
    s, _ = run.run_settings("quick", None, "average", 0)
    runner = run.Runner(tmp_path, {})
    model = run.average_checkpoints(runner, s, folder, "strong")
    assert model == folder / "average-90-105"
    assert load_file(str(model / "model.safetensors"))["w"].tolist() == [1.5, 1.5]
    assert (model / "config.json").read_text() == '{"step": 105}'
    assert not (model / "optimizer.pt").exists()
    assert runner.results["selection"]["sft-strong"]["steps"] == [90, 105]
