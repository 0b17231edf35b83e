"""Short system prompts for the toy task: where to find them (package data in ``toy/prompts/``).

Why: the packaged parallel prompt with its JSON tool schema is 1,140 tokens of the toy model's
tokenizer, most of a toy episode, and a 5 M-parameter model pays for every one of them on every
step. This one says the same things — the overview is sparse, the tool and its arguments, several
calls in one turn, the caps, think then answer — in 302 tokens of the toy preset's tokenizer (the
direct prompt: 103, not 142). Pass the path as ``engine.system_prompt`` (``paravt sft`` / ``eval`` /
``infer``) or
``trainer.system_prompt`` (``paravt train``); it replaces the system prompt verbatim.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from paravt.errors import UserError

__all__ = ["toy_system_prompt"]

#: dispatch mode → prompt file: ``direct`` offers no tool, the others describe crop_video
_FILES = {"parallel": "system_parallel.txt", "sequential": "system_parallel.txt",
          "direct": "system_direct.txt"}  # fmt: skip


def toy_system_prompt(mode: str = "parallel") -> Path:
    """The toy prompt file for a dispatch mode (``parallel``, ``sequential`` or ``direct``)."""
    if mode not in _FILES:
        raise UserError(f"no toy system prompt for mode {mode!r}; choose parallel or direct")
    return Path(str(resources.files("paravt.toy").joinpath("prompts", _FILES[mode])))
