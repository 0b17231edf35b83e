"""The agent room: prompts, the episode engine, and its contract with the model behind it.

The contract (``paravt.agent.backend``: ``Backend``, ``BackendBase``) is the engine's; the backends
that fulfil it live above this room (``paravt.backends`` for inference, ``paravt.rollout`` for the
trainer's samplers), and this room imports none of them (build one with
``paravt.backends.make_backend``).

Names are imported lazily so ``import paravt.agent`` stays cheap (no torch, no transformers)::

    from paravt.agent import EpisodeEngine, EngineConfig, EpisodeInput
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from paravt.errors import deprecated

if TYPE_CHECKING:  # what the lazy names are, for type checkers and editors (never run)
    from paravt.agent.backend import Backend, BackendBase
    from paravt.agent.chat import ChatCodec
    from paravt.agent.config import DEFAULT_MODEL_ID, BackendConfig, CropSettings, EngineConfig
    from paravt.agent.engine import EpisodeEngine
    from paravt.agent.prompts import load_prompts
    from paravt.schema.episodes import (
        CallRecord,
        EpisodeInput,
        EpisodeRecord,
        Generation,
        GenRequest,
        ImageItem,
        TokenPrompt,
        TokenStream,
        TurnRecord,
    )

_EXPORTS = {
    "Backend": "paravt.agent.backend",
    "BackendBase": "paravt.agent.backend",
    "EpisodeEngine": "paravt.agent.engine",
    "EngineConfig": "paravt.agent.config",
    "BackendConfig": "paravt.agent.config",
    "CropSettings": "paravt.agent.config",
    "DEFAULT_MODEL_ID": "paravt.agent.config",
    "EpisodeInput": "paravt.schema.episodes",
    "EpisodeRecord": "paravt.schema.episodes",
    "GenRequest": "paravt.schema.episodes",
    "Generation": "paravt.schema.episodes",
    "ImageItem": "paravt.schema.episodes",
    "CallRecord": "paravt.schema.episodes",
    "TokenPrompt": "paravt.schema.episodes",
    "TokenStream": "paravt.schema.episodes",
    "TurnRecord": "paravt.schema.episodes",
    "ChatCodec": "paravt.agent.chat",
    "load_prompts": "paravt.agent.prompts",
}

__all__ = [
    "DEFAULT_MODEL_ID",
    "Backend",
    "BackendBase",
    "BackendConfig",
    "CallRecord",
    "ChatCodec",
    "CropSettings",
    "EngineConfig",
    "EpisodeEngine",
    "EpisodeInput",
    "EpisodeRecord",
    "GenRequest",
    "Generation",
    "ImageItem",
    "TokenPrompt",
    "TokenStream",
    "TurnRecord",
    "load_prompts",
]

#: names that live in another room now, still answered here with TRL's rule: name -> home
_DEPRECATED = {"parse_turn": "paravt.grammar"}


def __getattr__(name: str):
    if name in _DEPRECATED:
        deprecated(f"paravt.agent.{name}", f"import it from {_DEPRECATED[name]}")
        return getattr(importlib.import_module(_DEPRECATED[name]), name)
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'paravt.agent' has no attribute {name!r}")
