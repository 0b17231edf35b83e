"""The shipped toy demo model: where it is, and the episode settings it was trained under.

Why: a newcomer's first run should show a model that decides its own parallel ``crop_video``
calls and answers right, offline and in seconds. ``demo_model/`` (package data) is the toy
experiment's quick-mode tool-SFT checkpoint (5.5 M parameters, fp16 safetensors) with its
tokenizer, processor and chat template; ``demo.yaml`` beside the weights records where it came
from, its eval numbers, and the engine settings of its training (32x32 frames, 4 overview frames,
the short toy prompt, the ``<think>`` prefix). A model that small answers only under the settings
it learned, so ``--model toy-demo`` (``paravt infer`` / ``paravt eval``) brings them along as
defaults that flags, ``--config`` and ``--set`` still override.

Rebuild: ``experiments/toy_paradox/run --quick --out OUT --export-demo`` (docs/TOY_TASK.md).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from paravt.config import read_yaml
from paravt.errors import UserError
from paravt.toy.prompts import toy_system_prompt

__all__ = ["CARD", "DEMO_MODEL", "demo_card", "demo_model_dir", "with_demo_defaults"]

#: the ``--model`` value that names the shipped demo model
DEMO_MODEL = "toy-demo"
#: the card beside the weights: source, eval numbers, engine settings (written by the export)
CARD = "demo.yaml"


def demo_model_dir() -> Path:
    """The shipped model folder (inside the installed package)."""
    path = Path(str(resources.files("paravt.toy").joinpath("demo_model")))
    if not (path / "config.json").is_file() or not (path / CARD).is_file():
        raise UserError(
            f"the toy demo model is missing from {path}: reinstall paravt (pip install -e .), or "
            "rebuild it with experiments/toy_paradox/run --quick --out OUT --export-demo"
        )
    return path


def demo_card() -> dict:
    """``demo.yaml``: where the weights came from, their eval, the engine they ran under."""
    return read_yaml(demo_model_dir() / CARD)


def with_demo_defaults(flags: dict) -> dict:
    """A command's flags with the demo's settings beneath them when ``--model toy-demo`` is
    given: ``backend.model`` becomes the folder, and the engine settings of its training fill
    what the flags leave open (the toy system prompt for the flags' dispatch mode). Any other
    model: the flags as they are."""
    backend = flags.get("backend", {})
    if backend.get("model") != DEMO_MODEL:
        return flags
    engine = dict(demo_card()["engine"])
    mode = flags.get("engine", {}).get("mode", engine.get("mode", "parallel"))
    engine["system_prompt"] = str(toy_system_prompt(mode))
    return {
        **flags,
        "backend": {**backend, "model": str(demo_model_dir())},
        "engine": {**engine, **flags.get("engine", {})},
    }
