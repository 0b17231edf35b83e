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
from paravt.agent.config import BackendConfig, EngineConfig


def make_backend(cfg: BackendConfig, script: str | Path | None = None) -> Backend:
    """The backend ``cfg.kind`` names, or, when ``script`` (a JSON file) is given, a
    ``ScriptedBackend`` replaying it (``paravt eval --backend scripted --script FILE``). Heavy
    imports (transformers, the resize kernels) happen when a backend is built, not at import."""
    if script is not None:
        return from_script_file(script)
    if cfg.kind == "hf":
        return HFBackend.from_config(cfg)
    return OpenAIBackend.from_config(cfg)


def check_serving(backend: Backend, engine: EngineConfig) -> None:
    """Before the first episode: an ``openai`` backend's server answers, serves the configured
    model and leaves frames of the engine's pixel budgets at their size
    (``OpenAIBackend.check_server``); a UserError of one line says which of them fails."""
    if not isinstance(backend, OpenAIBackend):
        return
    budgets = [(engine.min_pixels, engine.max_pixels, "engine.min_pixels/max_pixels")]
    crop = (engine.crop.min_pixels, engine.crop.max_pixels)
    if crop != budgets[0][:2]:
        budgets.append((*crop, "engine.crop.min_pixels/max_pixels"))
    backend.check_server(budgets)


__all__ = ["Backend", "BackendBase", "check_serving", "make_backend"]
