"""Backends: the model behind the episode engine, all behind one small protocol.

A backend is any object with

- ``generate(requests: list[GenRequest]) -> list[Generation]`` — one generation per request, in
  order; a failure is a ``Generation(error=...)``, never an exception for one bad request;
- ``codec``: a ``paravt.agent.chat.ChatCodec`` when the backend works in token space (it reads
  ``GenRequest.prompt_ids`` + ``pixel_values`` and returns generated ``token_ids``), or ``None``
  when it only takes chat messages (HTTP servers apply the template themselves).

``hf`` (local transformers model) and ``openai`` (OpenAI-compatible HTTP server) live here;
``paravt.testing.scripted.ScriptedBackend`` replays given completions; the trainer's policy
backend wraps the model being trained.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from paravt.agent.backends.hf import HFBackend
from paravt.agent.backends.openai import OpenAIBackend
from paravt.agent.config import BackendConfig
from paravt.agent.records import Generation, GenRequest


@runtime_checkable
class Backend(Protocol):
    codec: Any

    def generate(self, requests: list[GenRequest]) -> list[Generation]: ...


def make_backend(cfg: BackendConfig) -> Backend:
    """Build the backend ``cfg.kind`` names (torch and transformers load here, not at import)."""
    if cfg.kind == "hf":
        return HFBackend.from_config(cfg)
    return OpenAIBackend.from_config(cfg)


__all__ = ["Backend", "make_backend"]
