"""The episode engine's config inside the training config: one home per knob.

Every ``EngineConfig`` key is set from a recipe's ``engine`` section (``--set engine.X=...``) and
reaches the engine the trainer runs; an engine knob left under ``trainer`` names its new home; the
resolved engine is recorded in the run folder. No model loads here: these are config checks.
"""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
import yaml

from paravt.agent.config import CropSettings, EngineConfig
from paravt.errors import ConfigError
from paravt.train.engine_config import MOVED_TO_ENGINE, TrainEngineConfig
from paravt.train.run import load_command_config, para_config, start_run_folder
from paravt.train.trainer import ParaGRPOTrainer

#: A non-default value for every engine key (crop keys dotted); ``system_prompt`` gets a file.
NEW_VALUES = {
    "mode": "sequential",
    "evidence": "subagent",
    "max_turns": 4,
    "max_parallel": 3,
    "frames": 8,
    "overview_sampling": "keyframe",
    "timestamps": False,
    "max_new_tokens": 1000,
    "forced_tokens_mcq": 32,
    "forced_tokens_tvg": 100,
    "forced_tokens_oe": 200,
    "subagent_max_tokens": 300,
    "min_pixels": 1024,
    "max_pixels": 4096,
    "think_prefix": "",
    "system_prompt": None,
    "user_template": None,
    "tool_prompt": "paravt",
    "tool_response_layout": "paravt",
    "crop.fps": 2.0,
    "crop.min_frames": 4,
    "crop.max_frames": 8,
    "crop.workers": 3,
    "crop.decoder_threads": 2,
    "crop.skip_disposable": False,
    "crop.min_pixels": 1024,
    "crop.max_pixels": 4096,
    "reuse_cache": False,
    "reuse_cache_mb": 1024,
    "schedule": "rounds",
}
#: Keys with one allowed value in training, each refused otherwise (tested below).
FIXED_IN_TRAINING = {"temperature", "top_p", "keep_images", "crop.device"}


def _leaf_keys() -> set[str]:
    keys = {f.name for f in fields(EngineConfig) if f.name != "crop"}
    return keys | {f"crop.{f.name}" for f in fields(CropSettings)}


def _resolve(engine, key: str):
    for part in key.split("."):
        engine = getattr(engine, part)
    return engine


def test_every_engine_key_is_covered_here():
    """A knob added to EngineConfig must be added to this test (set it, or say why it is fixed)."""
    assert set(NEW_VALUES) | FIXED_IN_TRAINING == _leaf_keys()


def test_every_engine_knob_is_set_with_set_and_reaches_the_trainers_engine(tmp_path):
    prompt = tmp_path / "system.txt"
    prompt.write_text("Answer with crop_video.\n")
    template = tmp_path / "user.txt"
    template.write_text("${question}\n${options}${instruction}\n")
    values = dict(NEW_VALUES, system_prompt=str(prompt), user_template=str(template))
    overrides = [f"engine.{k}={v}" for k, v in values.items()]
    cfg = load_command_config("cpu-smoke", tuple(overrides))
    args = para_config(cfg)
    for mode in ("train", "eval"):
        engine = ParaGRPOTrainer._engine_config(_Holder(args), mode)
        assert isinstance(engine, EngineConfig)
        for key, value in values.items():
            assert _resolve(engine, key) == value, key
        for key in NEW_VALUES:  # each really differs from the training default
            assert _resolve(TrainEngineConfig(), key) != _resolve(engine, key), key


def test_sampling_is_the_trainers_and_evaluation_is_greedy():
    args = para_config(load_command_config("cpu-smoke", ("trainer.top_p=0.9",)))
    train = ParaGRPOTrainer._engine_config(_Holder(args), "train")
    assert (train.temperature, train.top_p) == (1.0, 0.9)  # the recipe's trainer.temperature
    assert ParaGRPOTrainer._engine_config(_Holder(args), "eval").temperature == 0.0
    for key, value in (("temperature", "0.7"), ("top_p", "0.5")):
        with pytest.raises(ConfigError, match=rf"engine\.{key}=.*set trainer\.{key} instead"):
            para_config(load_command_config("cpu-smoke", (f"engine.{key}={value}",)))


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("engine.keep_images=false", "engine.keep_images=false"),
        ("engine.crop.device=cuda", "crop.device='cuda': training decodes on the CPU"),
    ],
)
def test_engine_keys_fixed_in_training_are_refused(override, message):
    with pytest.raises(ConfigError, match=message):
        load_command_config("cpu-smoke", (override,))


@pytest.mark.parametrize(("old", "new"), sorted(MOVED_TO_ENGINE.items()))
def test_a_moved_trainer_key_names_its_new_home(tmp_path, old, new):
    """A recipe written before the move fails before anything loads, naming the key's new home,
    whether the key comes from the YAML file or from --set."""
    recipe = tmp_path / "old.yaml"
    recipe.write_text(yaml.safe_dump({"trainer": {"use_cpu": True, old: 1}}))
    with pytest.raises(ConfigError, match=rf"trainer\.{old} → engine\.{new}\b"):
        load_command_config(str(recipe), ())
    with pytest.raises(ConfigError, match=rf"trainer\.{old} → engine\.{new}\b"):
        load_command_config("cpu-smoke", (f"trainer.{old}=1",))


def test_the_engine_is_never_set_under_trainer():
    with pytest.raises(ConfigError, match="trainer.engine → engine"):
        load_command_config("cpu-smoke", ("trainer.engine.max_turns=1",))


def test_training_defaults_and_the_turn_budget_cap():
    """Training's engine defaults are docs/PROTOCOL.md §5's (not eval's), and the forced answer's and the
    sub-agent's budgets never exceed the per-turn budget (as the resolved config records)."""
    e = TrainEngineConfig()
    assert (e.min_pixels, e.max_pixels, e.think_prefix) == (784, 50176, "<think>\n")
    assert (e.crop.min_pixels, e.crop.max_pixels, e.crop.max_frames) == (784, 50176, 16)
    assert (e.forced_tokens_mcq, e.forced_tokens_tvg, e.forced_tokens_oe) == (64, 128, 256)
    small = TrainEngineConfig(max_new_tokens=100)
    forced = (small.forced_tokens_mcq, small.forced_tokens_tvg, small.forced_tokens_oe)
    assert forced == (64, 100, 100)
    assert small.subagent_max_tokens == 100
    # a plain EngineConfig built in Python is taken under the same rules
    assert TrainEngineConfig.of(EngineConfig(max_new_tokens=50)).forced_tokens_mcq == 50


def test_the_resolved_engine_is_recorded_in_the_run_folder(tmp_path):
    cfg = load_command_config("cpu-smoke", ("engine.max_new_tokens=10", "engine.crop.fps=2"))
    args = para_config(cfg, world_output_dir=str(tmp_path))
    start_run_folder(tmp_path, cfg, args, None, tmp_path / "metrics.jsonl")
    record = json.loads((tmp_path / "config.json").read_text())
    for engine in (record["command"]["engine"], record["trainer_resolved"]["engine"]):
        assert engine["max_new_tokens"] == 10 and engine["forced_tokens_oe"] == 10
        assert engine["crop"]["fps"] == 2.0 and engine["crop"]["skip_disposable"] is True
    assert "max_pixels" not in record["trainer_resolved"]  # one home: no flat copy


class _Holder:
    """What ``ParaGRPOTrainer._engine_config`` reads of the trainer: its config."""

    def __init__(self, args):
        self.para_args = args
