"""The agent room: prompts, the turn parser, the episode engine and its backends.

Names are imported lazily so ``import paravt.agent`` stays cheap (no torch, no transformers)::

    from paravt.agent import EpisodeEngine, EngineConfig, EpisodeInput
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "EpisodeEngine": "paravt.agent.engine",
    "EngineConfig": "paravt.agent.config",
    "BackendConfig": "paravt.agent.config",
    "CropSettings": "paravt.agent.config",
    "DEFAULT_MODEL_ID": "paravt.agent.config",
    "EpisodeInput": "paravt.agent.records",
    "EpisodeRecord": "paravt.agent.records",
    "GenRequest": "paravt.agent.records",
    "Generation": "paravt.agent.records",
    "ImageItem": "paravt.agent.records",
    "CallRecord": "paravt.agent.records",
    "TurnRecord": "paravt.agent.records",
    "ChatCodec": "paravt.agent.chat",
    "load_prompts": "paravt.agent.prompts",
    "make_backend": "paravt.backends.factory",
    "parse_turn": "paravt.grammar",
}

__all__ = [
    "DEFAULT_MODEL_ID",
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
    "TurnRecord",
    "load_prompts",
    "make_backend",
    "parse_turn",
]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'paravt.agent' has no attribute {name!r}")
