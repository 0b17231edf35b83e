"""The one config loader (``paravt.config.load_config``) and its rules: a ``Literal`` is a key's
list of choices (checked as YAML and ``--set`` are read, and by ``check_choices`` for an object
built in Python, with one message); a renamed key follows one deprecation rule (a
``FutureWarning`` naming the release that removes it, then an error naming its new home); every
error names the YAML line of its key; a ``Section`` types the keys of a class built later; the
flags a command was not given are left out."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import ClassVar, Literal

import pytest

from paravt.agent.config import EngineConfig, InferConfig
from paravt.config import Renamed, check_choices, load_config, section_of, to_dict
from paravt.errors import ConfigError
from paravt.rewards.config import RewardConfig


@dataclass
class Target:
    """A class whose construction does something (as HF's TrainingArguments sets up devices)."""

    steps: int = 10
    mode: Literal["fast", "slow"] = "fast"
    extra: dict = field(default_factory=dict)
    built: ClassVar[int] = 0

    def __post_init__(self) -> None:
        Target.built += 1


Keys = section_of(Target, "Keys", defaults={"steps": 5})


@dataclass
class Inner:
    size: int = 1
    shape: Literal["square", "round"] = "square"

    def __post_init__(self) -> None:
        check_choices(self)


@dataclass
class Command:
    name: str = "x"
    inner: Inner = field(default_factory=Inner)
    keys: Keys = field(default_factory=Keys)  # type: ignore[valid-type]

    RENAMED: ClassVar[tuple[Renamed, ...]] = (
        Renamed("keys.size", "inner.size", "0.2"),
        Renamed("keys.inner", "inner", None, "the inner section is top-level"),
    )


def test_a_literal_is_checked_by_the_loader_and_in_python_with_one_message(tmp_path):
    recipe = tmp_path / "c.yaml"
    recipe.write_text("name: a\ninner:\n  size: 2\n  shape: oval\n")
    with pytest.raises(ConfigError) as err:
        load_config(Command, recipe)
    assert str(err.value) == (
        f"inner.shape='oval': use 'square' or 'round' ({recipe} line 4)"
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"^shape='oval': use 'square' or 'round'$"):
        Inner(shape="oval")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"engine.mode='fast': use 'parallel', 'sequential'"):
        load_config(InferConfig, None, ("engine.mode=fast",))
    with pytest.raises(ConfigError, match=r"^mode='fast': use 'parallel', 'sequential' or"):
        EngineConfig(mode="fast")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^oe_metric='bleu': use 'f1' or 'exact'$"):
        RewardConfig(oe_metric="bleu")  # type: ignore[arg-type]


def test_a_deprecated_key_warns_naming_its_release_and_a_removed_one_names_its_home(tmp_path):
    with pytest.warns(FutureWarning, match=r"keys.size is deprecated and will be removed in "
                      r"paravt 0.2: set inner.size instead"):  # fmt: skip
        cfg = load_config(Command, None, ("keys.size=3",))
    assert cfg.inner.size == 3 and "size" not in to_dict(cfg)["keys"]
    with pytest.raises(ConfigError, match=r"keys.size=.* and inner.size=.* disagree"):
        load_config(Command, None, ("keys.size=3", "inner.size=4"))
    recipe = tmp_path / "old.yaml"
    recipe.write_text("name: a\nkeys:\n  steps: 2\n  inner:\n    size: 2\n")
    with pytest.raises(ConfigError) as err:
        load_config(Command, recipe)
    assert str(err.value) == (
        f"keys.inner → inner: the inner section is top-level ({recipe} line 4)"
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a config without renamed keys warns nothing
        load_config(Command, None, ("inner.size=3",))


def test_a_section_types_the_keys_and_builds_nothing(tmp_path):
    built = Target.built
    cfg = load_config(Command, None, ("keys.steps=7", "keys.extra.depth=2", "keys.extra.on=false"))
    assert Target.built == built  # the target is not built by reading its keys
    assert cfg.keys.steps == 7 and cfg.keys.extra == {"depth": 2, "on": False}  # --set typed
    assert "steps" in cfg.keys and "mode" not in cfg.keys
    assert cfg.keys.given() == {"steps": 7, "extra": {"depth": 2, "on": False}}
    assert load_config(Command).keys.arguments() == {"steps": 5}  # paravt's own default
    assert to_dict(cfg)["keys"] == cfg.keys.given()  # the run folder records what was set
    with pytest.raises(ConfigError, match=r"unknown config key 'keys.stepz' for Target"):
        load_config(Command, None, ("keys.stepz=1",))
    with pytest.raises(ConfigError, match=r"keys.mode='medium': use 'fast' or 'slow'"):
        load_config(Command, None, ("keys.mode=medium",))
    recipe = tmp_path / "c.yaml"
    recipe.write_text("keys:\n  extra:\n    text: 'on'\n")  # the file's own types stay
    assert load_config(Command, recipe).keys.extra == {"text": "on"}


def test_flags_not_given_are_left_to_the_file_and_the_defaults(tmp_path):
    recipe = tmp_path / "c.yaml"
    recipe.write_text("name: from-file\n")
    assert load_config(Command, recipe, (), base={"name": None}).name == "from-file"
    assert load_config(Command, None, (), base={"name": None}).name == "x"
    assert load_config(Command, None, (), base={"name": "flag"}).name == "flag"
