"""Backends: the model behind the episode engine, all behind one protocol.

A backend satisfies ``paravt.agent.backends.base.Backend`` (``generate`` and the members the
engine reads; ``BackendBase`` holds their defaults).

``hf`` (local transformers model), ``openai`` (OpenAI-compatible HTTP server) and ``scripted``
(``ScriptedBackend``: replays given completions) live here; the trainer's policy backend wraps
the model being trained.
"""

from __future__ import annotations

from pathlib import Path

from paravt.agent.backends.base import Backend, BackendBase
from paravt.agent.backends.hf import HFBackend
from paravt.agent.backends.openai import OpenAIBackend
from paravt.agent.backends.scripted import from_script_file
from paravt.agent.config import BackendConfig


def make_backend(cfg: BackendConfig, script: str | Path | None = None) -> Backend:
    """The backend ``cfg.kind`` names, or, when ``script`` (a JSON file) is given, a
    ``ScriptedBackend`` replaying it (``paravt eval --backend scripted --script FILE``). Heavy
    imports (transformers, the resize kernels) happen when a backend is built, not at import."""
    if script is not None:
        return from_script_file(script)
    if cfg.kind == "hf":
        return HFBackend.from_config(cfg)
    return OpenAIBackend.from_config(cfg)


__all__ = ["Backend", "BackendBase", "make_backend"]
