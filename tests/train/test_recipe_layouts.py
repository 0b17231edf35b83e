"""Every shipped recipe builds its trainer config at the layout it declares (``layout:``).

TRL's ``GRPOConfig`` splits a step's episodes over ``world_size`` ranks as it is built and raises
if they are not whole groups: the paper recipe once declared its seven trainers in a comment and
asked for 7 × 1 × 7 = 49 episodes, which no group of 8 divides, so it could only fail on the
GPUs. Here each recipe is built as ``layout.trainer_ranks`` ranks would build it (no process
group, no model), and a layout that cannot split its batch is refused with one line naming the
numbers and the knob, before anything loads.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paravt.errors import ConfigError
from paravt.train.layout import Layout, episodes_per_step, layout_problem
from paravt.train.run import RECIPES, load_command_config, para_config

QWEN3_VL_8B = Path(__file__).parent / "data" / "qwen3-vl-8b"
GRPO_RECIPES = [r for r in RECIPES if not r.startswith("sft")]
# this machine has no GPU: HF refuses bf16 without use_cpu, which is no part of the layout
CPU = ("trainer.use_cpu=true",)


@pytest.mark.parametrize("name", GRPO_RECIPES)
def test_every_grpo_recipe_builds_trl_config_at_its_declared_world_size(name, tmp_path):
    cfg = load_command_config(name, (f"output_dir={tmp_path}", *CPU), check_trainer=False)
    n = cfg.layout.trainer_ranks
    args = para_config(cfg, at_world_size=n)  # TRL's GRPOConfig.__post_init__ runs in full
    assert args.world_size == n
    assert args.generation_batch_size == episodes_per_step(n, cfg.trainer.given())
    assert args.generation_batch_size % args.num_generations == 0


def test_paper_recipes_declare_seven_trainers_and_one_server_with_56_episodes():
    for name in ("paragrpo", "vanilla_grpo"):
        cfg = load_command_config(name, CPU, check_trainer=False)
        assert cfg.layout == Layout(trainer_ranks=7, servers=1)
        assert episodes_per_step(7, cfg.trainer.given()) == 56  # 7 × 1 × 8
    for name in ("paragrpo-sync", "vanilla_grpo-sync"):
        cfg = load_command_config(name, CPU, check_trainer=False)
        assert cfg.layout == Layout(trainer_ranks=8, servers=0)
        assert episodes_per_step(8, cfg.trainer.given()) == 56  # 8 × 1 × 7


@pytest.mark.parametrize("name", [r for r in RECIPES if r.startswith("sft")])
def test_every_sft_recipe_builds_trl_config_at_its_declared_world_size(name, tmp_path):
    from paravt.train.sft.run import load_sft_config, sft_args

    cfg = load_sft_config(name, (f"output_dir={tmp_path}",))
    assert cfg.layout.trainer_ranks == 1  # the process this test runs in
    assert sft_args(cfg).world_size == 1


def test_the_old_paragrpo_batch_at_seven_ranks_is_refused_in_one_line_naming_the_knob(tmp_path):
    """The recipe as it was (accumulation 7 at 7 ranks): TRL's ValueError, before; now one line."""
    cfg = load_command_config(
        "paragrpo",
        (f"output_dir={tmp_path}", *CPU, "trainer.gradient_accumulation_steps=7"),
        check_trainer=False,
    )
    with pytest.raises(ConfigError) as err:
        para_config(cfg, at_world_size=7)
    line = str(err.value)
    assert "\n" not in line
    assert (
        "7 trainer rank(s) × per_device_train_batch_size 1 × gradient_accumulation_steps 7" in line
    )
    assert "49 episodes" in line and "num_generations 8" in line
    assert "trainer.gradient_accumulation_steps=8" in line  # a value that works: 56 episodes


def test_layout_problem_names_steps_per_generation_and_generation_batch_size():
    trainer = {"num_generations": 4, "per_device_train_batch_size": 1, "steps_per_generation": 3}
    assert "trainer.steps_per_generation=4" in layout_problem(2, trainer)
    assert layout_problem(2, {**trainer, "steps_per_generation": 2}) is None
    total = {"num_generations": 4, "per_device_train_batch_size": 1, "generation_batch_size": 6}
    assert "trainer.generation_batch_size" in layout_problem(2, total)
    with pytest.raises(ConfigError, match="layout.trainer_ranks=0"):
        Layout(trainer_ranks=0)


def test_train_refuses_a_bad_layout_before_any_model_loads(tmp_path, capsys):
    """The command line: exit 2, one line, and no model is looked for (the model path is absent)."""
    from paravt.cli.main import main

    code = main(
        [
            "train",
            "--config",
            "paragrpo",
            "--set",
            f"model={tmp_path / 'absent'}",
            "--set",
            f"output_dir={tmp_path / 'run'}",
            "--set",
            "trainer.use_cpu=true",
            "--set",
            "trainer.gradient_accumulation_steps=7",
        ]
    )
    assert code == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "gradient_accumulation_steps 7" in err[0], err
    assert "does not divide" in err[0]
    assert not (tmp_path / "run").exists()


def test_plan_reads_the_layout(capsys):
    """``--plan`` with no --world-size plans at the recipe's 7 trainer ranks and says so."""
    from paravt.cli.main import main

    base = ["train", "--config", "paragrpo", "--set", f"model={QWEN3_VL_8B}", "--plan"]
    assert main([*base, "--strategy", "zero3", "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["world_size"] == 7 and plan["episodes_per_step"] == 56
    assert plan["layout"] == "7 trainer ranks + 1 vLLM server"
    assert main([*base, "--strategy", "zero3"]) == 0
    assert "recipe layout: 7 trainer ranks + 1 vLLM server; 56 episodes a step" in (
        capsys.readouterr().out
    )
    # a batch the layout does not split into groups is refused by the plan as by the run
    bad = [*base, "--strategy", "zero3", "--set", "trainer.gradient_accumulation_steps=7"]
    assert main(bad) == 2
    assert "7 trainer rank(s)" in capsys.readouterr().err
