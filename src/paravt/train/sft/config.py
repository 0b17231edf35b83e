"""``SFTConfig``: the one config of ``paravt sft`` (YAML recipe + ``--set key=value``).

Sections:

- ``model``, ``output_dir``, ``data`` — as in ``paravt train`` (``DataConfig``: the same rows).
- ``engine`` — the episode engine's own ``EngineConfig`` (the same keys as ``paravt infer`` /
  ``eval``): frame budget K (``frames``), pixel budgets, think prefix, turns, parallel calls.
  The trajectories are played under it, so the model learns the prompt layout it will meet.
- ``frames_gating`` / ``gating_choices`` — nFrames Gating of the trajectories (K per row from
  ``paravt.train.gating.gated_frames``, epoch 0), so one cold-start set covers many K.
- ``trajectories`` — who plays the episodes (``TrajectoryConfig``).
- ``trainer`` — the keys of TRL's ``SFTConfig`` (HF ``TrainingArguments`` + TRL's SFT keys),
  typed and checked as the recipe is read (``SFTKeys``); ``paravt.train.sft.run.sft_args`` builds
  TRL's ``SFTConfig`` from them where the run starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trl import SFTConfig as TRLSFTConfig

from paravt.agent.config import EngineConfig
from paravt.config import Section, section_of
from paravt.errors import ConfigError
from paravt.train.gating import PAPER_CHOICES
from paravt.train.layout import Layout
from paravt.train.run import DataConfig

if TYPE_CHECKING:  # the keys are TRL's SFTConfig's, made at import (section_of)
    _SFTKeys = Section
else:
    _SFTKeys = section_of(
        TRLSFTConfig,
        "SFTKeys",
        exclude=("output_dir",),
        defaults={"save_only_model": False, "max_length": None},
    )

__all__: list[str] = []  # nothing here is for the other rooms


class SFTKeys(_SFTKeys):
    """An sft recipe's ``trainer`` section: every key of TRL's ``SFTConfig``, typed and checked
    as the recipe is read (``paravt.config.section_of``). paravt's defaults: ``save_only_model``
    off (a checkpoint resumes) and ``max_length`` None (an episode longer than a set
    ``max_length`` is skipped, never cut)."""


@dataclass
class TrajectoryConfig:
    """The trajectory backend and how the episodes are played.

    ``backend``: ``scripted`` (``paravt.backends.scripted.ScriptedBackend``; ``options.script`` is
    a list of turns, a mapping of row id to turns, or a JSON file holding either), ``hf`` (a
    teacher model through ``paravt.backends.make_backend``; ``options`` are
    ``BackendConfig`` keys, its tokenizer must be the student's), or an import path
    ``module:Attr`` called with ``options`` as keyword arguments (plus ``processor=`` when it takes
    one), e.g. ``paravt.toy.oracle:ToyOracleBackend`` with ``{tool_prior: 0.9, format_noise: 0.2}``.
    The backend must work in token space (have a ``codec``): SFT trains on the engine's ids.
    ``batch_size``: episodes per engine run (one batched video pass per tool round).
    """

    backend: str = "scripted"
    options: dict = field(default_factory=dict)
    batch_size: int = 16

    def __post_init__(self) -> None:
        if self.batch_size < 1:
            raise ConfigError(f"trajectories.batch_size must be at least 1, got {self.batch_size}")
        if not self.backend:
            raise ConfigError("trajectories.backend is empty: name scripted, hf or module:Attr")


@dataclass
class SFTConfig:
    """``paravt sft``'s config; the sections are described in the module docstring."""

    model: str = "tiny:qwen3-vl"
    output_dir: str = "runs/paravt-sft"
    #: the ranks the recipe is written for (``paravt.train.layout``): SFT has no groups to keep
    #: whole, so it only says where the recipe was meant to run
    layout: Layout = field(default_factory=Layout)
    data: DataConfig = field(default_factory=DataConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    frames_gating: bool = False
    gating_choices: list[int] = field(default_factory=lambda: list(PAPER_CHOICES))
    trajectories: TrajectoryConfig = field(default_factory=TrajectoryConfig)
    trainer: SFTKeys = field(default_factory=SFTKeys)

    def __post_init__(self) -> None:
        if self.frames_gating and (not self.gating_choices or min(self.gating_choices) < 1):
            raise ConfigError("gating_choices must list K values ≥ 1, e.g. [4, 8, 16, 32, 64]")
        if not self.engine.keep_images:
            raise ConfigError(
                "engine.keep_images=false: SFT trains on the episodes' frames; set it to true"
            )
