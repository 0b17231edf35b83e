"""The reward constants inside the training config: one ``rewards`` section, every field of
``RewardConfig`` settable with ``--set rewards.KEY=VALUE``, reaching the trainer's scoring and
recorded in the run folder; the old flat ``trainer`` keys are deprecated aliases. No model loads
here: these are config checks.
"""

from __future__ import annotations

import json
from dataclasses import fields, replace

import pytest
import yaml

from paravt.errors import ConfigError
from paravt.rewards import RewardConfig
from paravt.rewards.config import REFERENCE_ADVANTAGE
from paravt.train.run import FLAT_REWARD_KEYS, load_command_config, para_config, start_run_folder
from paravt.train.trainer import ParaGRPOTrainer

#: A value for every RewardConfig field that differs from its default.
NEW_VALUES = {
    "format_weight": 0.7,
    "anchor_lambda": 0.25,
    "think_min_chars": 12,
    "think_min_words": 2,
    "think_min_new_words": 1,
    "think_bonus": 0.15,
    "answer_bonus": 0.35,
    "answer_close_bonus": 0.25,
    "think_before_call_bonus": 0.2,
    "balanced_bonus": 0.05,
    "anchor_close": 0.3,
    "anchor_flow": 0.2,
    "anchor_unclosed": -0.2,
    "tool_parseable": 0.0,
    "tool_executed": 0.4,
    "tool_correct_bonus": 0.6,
    "tool_correct_threshold": 0.9,
    "tool_bonus_requires_call": False,
    "oe_metric": "exact",
    "token_anchor": True,
    "token_anchor_values": {"</think>": 0.2, "</answer>": 0.1},
    "reward_bias": -0.2,
    "reward_scale": 10.0,
    "reward_clip": 20.0,
    "advantage_norm": "group_then_batch",
    "kl_in_reward": 0.01,
}


class _Holder:
    """What ``ParaGRPOTrainer._reward_config`` reads of the trainer: its config."""

    def __init__(self, args):
        self.para_args = args


def _set(key, value) -> str:
    text = json.dumps(value) if isinstance(value, (dict, bool)) else str(value)
    return f"rewards.{key}={text}"


def test_every_reward_field_is_covered_here():
    """A constant added to RewardConfig must be added to this test."""
    assert set(NEW_VALUES) == {f.name for f in fields(RewardConfig)}
    defaults = RewardConfig()
    for key, value in NEW_VALUES.items():
        assert getattr(defaults, key) != value, key


def test_every_reward_field_is_set_with_set_and_reaches_the_scoring(tmp_path):
    overrides = tuple(_set(k, v) for k, v in NEW_VALUES.items())
    cfg = load_command_config("cpu-smoke", overrides)
    args = para_config(cfg, world_output_dir=str(tmp_path))
    scoring = ParaGRPOTrainer._reward_config(_Holder(args))
    assert isinstance(scoring, RewardConfig)
    for key, value in NEW_VALUES.items():
        assert getattr(scoring, key) == value, key
    # and the run folder records it, once, in the rewards section
    start_run_folder(tmp_path, cfg, args, None, tmp_path / "metrics.jsonl")
    record = json.loads((tmp_path / "config.json").read_text())
    for section in (record["command"]["rewards"], record["trainer_resolved"]["rewards"]):
        assert section == NEW_VALUES
    for key in FLAT_REWARD_KEYS:
        assert key not in record["trainer_resolved"] and key not in record["command"]["trainer"]


def test_a_yaml_rewards_section_is_read(tmp_path):
    recipe = tmp_path / "r.yaml"
    recipe.write_text(
        yaml.safe_dump({"trainer": {"use_cpu": True}, "rewards": {"think_bonus": 0.05}})
    )
    args = para_config(load_command_config(str(recipe), ()))
    assert args.rewards.think_bonus == 0.05 and args.rewards.anchor_lambda == 0.5


def test_an_unknown_reward_key_exits_2_naming_the_known_ones(capsys):
    from paravt.cli.common import run_guarded
    from paravt.cli.main import cli

    with pytest.raises(ConfigError, match=r"rewards\.think_bonuz.*known keys: .*think_bonus"):
        load_command_config("cpu-smoke", ("rewards.think_bonuz=0.1",))
    code = run_guarded(cli, ["train", "--config", "cpu-smoke", "--set", "rewards.think_bonuz=1"])
    assert code == 2
    err = capsys.readouterr().err
    assert "rewards.think_bonuz" in err
    for key in ("tool_correct_bonus", "anchor_close", "think_min_chars"):
        assert key in err
    with pytest.raises(ConfigError, match="oe_metric=.bleu.: use .f1. or .exact."):
        load_command_config("cpu-smoke", ("rewards.oe_metric=bleu",))
    with pytest.raises(ConfigError, match="top-level rewards section"):
        load_command_config("cpu-smoke", ("trainer.rewards.think_bonus=0.1",))


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("anchor_lambda", "0", 0.0),
        ("format_weight", "0.5", 0.5),
        ("token_anchor", "true", True),
        ("oe_metric", "exact", "exact"),
        ("token_anchor_values", '{"</think>": 0.3}', {"</think>": 0.3}),
    ],
)
def test_a_flat_trainer_reward_key_is_a_deprecated_alias(tmp_path, key, value, expected):
    """Recipes written before the move (the toy experiment's saved configs) still run, with a
    warning, and what is recorded is the rewards section."""
    assert key in FLAT_REWARD_KEYS
    bare = tmp_path / "bare.yaml"  # a recipe with no rewards section
    bare.write_text(yaml.safe_dump({"trainer": {"use_cpu": True}}))
    with pytest.warns(FutureWarning) as caught:  # TRL's rule (was a log line: caplog)
        cfg = load_command_config(str(bare), (f"trainer.{key}={value}",))
    text = " ".join(str(w.message) for w in caught)
    assert f"trainer.{key}" in text and f"rewards.{key}" in text
    assert "deprecated" in text
    args = para_config(cfg, world_output_dir=str(tmp_path))
    assert getattr(args.rewards, key) == expected != getattr(RewardConfig(), key)
    assert key not in cfg.trainer and getattr(cfg.rewards, key) == expected
    # from a YAML file too
    recipe = tmp_path / "old.yaml"
    recipe.write_text(yaml.safe_dump({"trainer": {"use_cpu": True, key: yaml.safe_load(value)}}))
    with pytest.warns(FutureWarning, match="removed in paravt 0.2"):
        assert getattr(para_config(load_command_config(str(recipe), ())).rewards, key) == expected


def test_a_flat_key_and_its_rewards_key_that_disagree_are_refused():
    with pytest.raises(ConfigError, match=r"trainer\.anchor_lambda=.*rewards\.anchor_lambda"):
        load_command_config("cpu-smoke", ("trainer.anchor_lambda=0.1", "rewards.anchor_lambda=0.2"))
    # the same value both ways is one setting
    cfg = load_command_config(
        "cpu-smoke", ("trainer.anchor_lambda=0.2", "rewards.anchor_lambda=0.2")
    )
    assert cfg.rewards.anchor_lambda == 0.2


def test_the_packaged_recipes_state_their_rewards():
    one_proc = (
        "trainer.bf16=false",
        "trainer.use_cpu=true",
        "trainer.per_device_train_batch_size=8",
    )
    # the reference recipes: the paper's constants (the vanilla baseline's), and the reference's
    # way from reward to advantage, with TRL's beta at 0 (the KL is in the reward)
    for name in ("paragrpo", "paragrpo-sync"):
        args = para_config(load_command_config(name, one_proc))
        assert args.rewards == RewardConfig(**REFERENCE_ADVANTAGE) and args.beta == 0.0
    for name in ("vanilla_grpo", "vanilla_grpo-sync"):
        args = para_config(load_command_config(name, one_proc))
        assert args.rewards == replace(RewardConfig.vanilla(), **REFERENCE_ADVANTAGE)
        assert args.beta == 0.0
    smoke = para_config(load_command_config("cpu-smoke", ())).rewards
    assert smoke.token_anchor is True and smoke.advantage_norm == "group"


def test_the_kl_as_a_reward_and_as_a_loss_term_are_refused_together(tmp_path):
    """rewards.kl_in_reward with trainer.beta would count the KL twice: refused before anything
    loads, naming both keys and the fix; with beta 0 it is accepted."""
    with pytest.raises(ConfigError, match=r"rewards\.kl_in_reward=0\.01.*trainer\.beta=0\.01"):
        para_config(
            load_command_config("cpu-smoke", ("rewards.kl_in_reward=0.01", "trainer.beta=0.01")),
            world_output_dir=str(tmp_path),
        )
    ok = load_command_config("cpu-smoke", ("rewards.kl_in_reward=0.01", "trainer.beta=0"))
    assert para_config(ok, world_output_dir=str(tmp_path)).rewards.kl_in_reward == 0.01
    for bad, match in [
        ("rewards.reward_scale=0", "reward_scale=0"),
        ("rewards.reward_clip=-1", "reward_clip=-1"),
        ("rewards.advantage_norm=batch", "advantage_norm='batch'"),
    ]:
        with pytest.raises(ConfigError, match=match):
            load_command_config("cpu-smoke", (bad,))
