"""Backends: the model behind the episode engine, all behind one small protocol.

A backend is any object with

- ``generate(requests: list[GenRequest]) -> list[Generation]`` — one generation per request, in
  order; a failure is a ``Generation(error=...)``, never an exception for one bad request;
- ``codec``: a ``paravt.agent.chat.ChatCodec`` when the backend works in token space (it reads
  ``GenRequest.prompt_ids`` + ``pixel_values`` and returns generated ``token_ids``), or ``None``
  when it only takes chat messages (HTTP servers apply the template themselves).

``hf`` (local transformers model), ``openai`` (OpenAI-compatible HTTP server) and ``scripted``
(``ScriptedBackend``: replays given completions) live here; the trainer's policy backend wraps
the model being trained.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from paravt.agent.backends.hf import HFBackend
from paravt.agent.backends.openai import OpenAIBackend
from paravt.agent.backends.scripted import from_script_file
from paravt.agent.config import BackendConfig, EngineConfig
from paravt.agent.records import Generation, GenRequest


@runtime_checkable
class Backend(Protocol):
    codec: Any

    def generate(self, requests: list[GenRequest]) -> list[Generation]: ...


def make_backend(cfg: BackendConfig, script: str | Path | None = None) -> Backend:
    """The backend ``cfg.kind`` names, or, when ``script`` (a JSON file) is given, a
    ``ScriptedBackend`` replaying it (``paravt eval --backend scripted --script FILE``). Heavy
    imports (transformers, the resize kernels) happen when a backend is built, not at import."""
    if script is not None:
        return from_script_file(script)
    if cfg.kind == "hf":
        return HFBackend.from_config(cfg)
    return OpenAIBackend.from_config(cfg)


def check_backend(backend: Backend, engine: EngineConfig) -> None:
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


__all__ = ["Backend", "check_backend", "make_backend"]
