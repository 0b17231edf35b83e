"""The episode engine's config as ``paravt train`` uses it: ``EngineConfig`` with training defaults.

Training plays its episodes with the same engine (and the same ``EngineConfig``) as ``infer``,
``eval`` and ``sft``, so every engine knob (turns, parallel calls, overview K and sampling, pixel
budgets, forced-answer budgets, think prefix, system prompt, the crop window's fps, frames,
workers and ``skip_disposable`` ...) is a key of a recipe's top-level ``engine:`` section and of
``--set engine.X=...``. This module holds what training changes about it, and nothing else:

- defaults of docs/PROTOCOL.md §5 instead of the evaluation ones (the small training pixel budget for the
  overview, the think prefix on);
- the forced answer's and the sub-agent's budgets are capped by the per-turn budget, so an
  episode's generated length stays within ``(max_turns + 1) × max_new_tokens`` (the resolved,
  capped values are what the run folder records);
- sampling is the trainer's: training samples at TRL's ``trainer.temperature``/``trainer.top_p``
  and evaluates greedily, so ``engine.temperature``/``engine.top_p`` are refused rather than
  silently ignored;
- ``MOVED_TO_ENGINE``: the flat ``trainer.*`` keys these knobs had before they moved here (removed:
  a recipe that still uses one fails with the key's new home, ``paravt.train.run``'s
  ``TrainCommandConfig.RENAMED``).

It imports neither TRL nor torch: ``paravt.train.run`` reads recipes with it before anything loads.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from paravt.agent.config import EngineConfig
from paravt.errors import ConfigError
from paravt.video.config import WINDOW_MAX_PIXELS, WINDOW_MIN_PIXELS

__all__ = ["TrainEngineConfig"]

#: Former ``trainer.<key>`` → its home in the ``engine`` section (docs/TRAIN.md, "Keys that moved").
MOVED_TO_ENGINE = {
    "dispatch_mode": "mode",
    "evidence_mode": "evidence",
    "max_turns": "max_turns",
    "max_parallel": "max_parallel",
    "max_turn_tokens": "max_new_tokens",
    "overview_frames": "frames",
    "timestamps": "timestamps",
    "min_pixels": "min_pixels",
    "max_pixels": "max_pixels",
    "window_max_frames": "crop.max_frames",
    "video_device": "crop.device",
    "think_prefix": "think_prefix",
    "system_prompt": "system_prompt",
}

#: The budgets the per-turn budget (``max_new_tokens``) caps during training.
CAPPED_BY_TURN_BUDGET = (
    "forced_tokens_mcq",
    "forced_tokens_tvg",
    "forced_tokens_oe",
    "subagent_max_tokens",
)

_ENGINE_DEFAULTS = EngineConfig()


@dataclass
class TrainEngineConfig(EngineConfig):
    """``EngineConfig`` with docs/PROTOCOL.md §5's training defaults (see the module docstring): the
    overview frames share the crop windows' budget (``WINDOW_MIN_PIXELS`` to ``WINDOW_MAX_PIXELS``) and the think prefix is on.
    Every other key and default is ``EngineConfig``'s."""

    min_pixels: int = WINDOW_MIN_PIXELS
    max_pixels: int = WINDOW_MAX_PIXELS
    think_prefix: str = "<think>\n"

    def __post_init__(self) -> None:
        if self.crop.device != "cpu":  # before the engine's own check: the same line on any host
            raise ConfigError(
                f"engine.crop.device={self.crop.device!r}: training decodes on the CPU for now "
                "(the learner's rows are not yet built on its device); set engine.crop.device: cpu"
            )
        super().__post_init__()
        if not self.keep_images:
            raise ConfigError(
                "engine.keep_images=false: the trainer's loss forward needs the episodes' frames; "
                "set it to true"
            )
        if self.system_prompt is not None and not Path(self.system_prompt).is_file():
            raise ConfigError(
                f"engine.system_prompt={self.system_prompt!r} is not a file: give a text file, or "
                "null for the packaged prompt"
            )
        if self.user_template is not None and not Path(self.user_template).is_file():
            raise ConfigError(
                f"engine.user_template={self.user_template!r} is not a file: give a template "
                "file, or null for the packaged user prompt"
            )
        for name in CAPPED_BY_TURN_BUDGET:
            setattr(self, name, min(getattr(self, name), self.max_new_tokens))

    @classmethod
    def of(cls, engine: EngineConfig) -> TrainEngineConfig:
        """A plain ``EngineConfig`` (e.g. built in Python) under the training rules, as given."""
        if isinstance(engine, cls):
            return engine
        return cls(**{f.name: getattr(engine, f.name) for f in fields(EngineConfig)})


def sampling_set_on_engine(engine: EngineConfig) -> str | None:
    """The message for an engine section that sets sampling, which training takes from the
    trainer (the trainer itself runs the engine with its own values: ``ParaGRPOTrainer``)."""
    for name in ("temperature", "top_p"):
        if getattr(engine, name) != getattr(_ENGINE_DEFAULTS, name):
            return (
                f"engine.{name}={getattr(engine, name)!r}: training samples at trainer.{name} "
                f"(TRL's key) and evaluates greedily; set trainer.{name} instead"
            )
    return None
