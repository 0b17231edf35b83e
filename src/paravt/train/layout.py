"""A recipe's layout: how many trainer ranks and vLLM servers it was written for.

Why a field and not a comment: the paper recipe once said "8 ranks" in a comment while its launch
line started seven trainers beside one server, and 7 × 1 × 7 = 49 episodes a step is not a whole
number of groups of 8, so TRL's ``GRPOConfig`` refused it before the first step. With the layout a
field, ``paravt train --plan`` makes its plan at ``trainer_ranks`` when no launch says otherwise,
the test suite builds every shipped recipe's trainer config at that world size
(tests/train/test_recipe_layouts.py), and a launch whose ranks do not divide into whole groups is
refused with one line (``layout_problem``) before any model loads.

It imports neither torch nor TRL: recipes are read with it before anything heavy loads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from paravt.errors import ConfigError

__all__ = ["Layout", "episodes_per_step", "layout_problem"]


@dataclass
class Layout:
    """``trainer_ranks``: the trainer processes the recipe is written for (one a GPU);
    ``servers``: the vLLM servers beside them (server mode; 0 when the trainers sample
    themselves). The launch may differ (a smaller test run); the batch arithmetic is then checked
    at the launch's own world size."""

    trainer_ranks: int = 1
    servers: int = 0

    def __post_init__(self) -> None:
        if int(self.trainer_ranks) < 1 or int(self.servers) < 0:
            raise ConfigError(
                f"layout.trainer_ranks={self.trainer_ranks}, layout.servers={self.servers}: give "
                "at least 1 trainer rank and 0 or more servers"
            )

    def describe(self) -> str:
        """``7 trainer ranks + 1 vLLM server`` (what ``--plan`` prints)."""
        ranks = f"{self.trainer_ranks} trainer rank{'s' if self.trainer_ranks != 1 else ''}"
        if not self.servers:
            return ranks
        return f"{ranks} + {self.servers} vLLM server{'s' if self.servers != 1 else ''}"


def _knob(trainer: Mapping[str, Any]) -> tuple[str, int]:
    """The key that sets a rank's rollouts a step, and its value (TRL's rule: ``steps_per_
    generation`` if given, else ``generation_batch_size`` is split, else the accumulation)."""
    if trainer.get("steps_per_generation"):
        return "steps_per_generation", int(trainer["steps_per_generation"])
    return "gradient_accumulation_steps", int(trainer.get("gradient_accumulation_steps", 1))


def episodes_per_step(world_size: int, trainer: Mapping[str, Any]) -> int:
    """Episodes one rollout samples over all ranks (TRL's ``generation_batch_size``)."""
    if trainer.get("generation_batch_size"):
        return int(trainer["generation_batch_size"])
    micro = int(trainer.get("per_device_train_batch_size", 8))
    return micro * int(world_size) * _knob(trainer)[1]


def layout_problem(world_size: int, trainer: Mapping[str, Any]) -> str | None:
    """Why ``world_size`` ranks cannot split this trainer section's batch into whole groups (one
    line naming the three numbers and the knob, with a value that works), or None. TRL raises a
    ``ValueError`` for the same arithmetic, but only once the config is built on the launched
    ranks; this line comes first and says what to change."""
    groups = int(trainer.get("num_generations", 8))
    micro = int(trainer.get("per_device_train_batch_size", 8))
    if trainer.get("generation_batch_size"):
        total = int(trainer["generation_batch_size"])
        if total % groups == 0 and total % (micro * world_size) == 0:
            return None
        return (
            f"trainer.generation_batch_size={total} at {world_size} rank(s) × "
            f"per_device_train_batch_size {micro}: it must be a multiple of num_generations "
            f"{groups} and of {micro * world_size}; change trainer.generation_batch_size"
        )
    knob, value = _knob(trainer)
    total = micro * int(world_size) * value
    if total % groups == 0:
        return None
    fix = next(
        v for v in range(value + 1, value + groups + 1) if micro * world_size * v % groups == 0
    )
    return (
        f"{world_size} trainer rank(s) × per_device_train_batch_size {micro} × {knob} {value} = "
        f"{total} episodes a step, which num_generations {groups} does not divide: set "
        f"trainer.{knob}={fix} ({micro * world_size * fix} episodes, "
        f"{micro * world_size * fix // groups} groups), or change the ranks or num_generations"
    )
