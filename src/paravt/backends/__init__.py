"""Backends for inference: the models behind the episode engine in ``paravt infer``/``eval``, each
fulfilling the engine's protocol (``paravt.agent.backend``).

Each module here serves the engine's ``generate(requests) -> generations`` and says which of its
needs it meets (token ids, logprobs, images or pixel rows):

- ``hf``: a local transformers model; ``openai``: an OpenAI-compatible HTTP server;
- ``scripted``: replays given completions (the toy task's oracle, ``paravt.toy.oracle``, builds on
  it);
- ``factory``: ``make_backend`` builds one from a ``BackendConfig``;
- the helpers the local samplers share (``cached_decode``, ``episode_state``, ``shared_vision``)
  and the HTTP plumbing (``http``: one pooled client, one health wait), which the trainer's
  samplers in ``paravt.rollout`` (the policy, vLLM) build on too: this room sits below the
  rollout and imports nothing of it.

Names load on first use, so that importing one backend does not load every backend::

    from paravt.backends import make_backend, ScriptedBackend

The engine's protocol is imported from its home, ``paravt.agent.backend`` (``Backend``,
``BackendBase``, ``check_backend``); the names here are deprecated (removed in paravt 0.2).
"""

from __future__ import annotations

import importlib

from paravt.errors import deprecated

_EXPORTS = {
    "backend_from_spec": "paravt.backends.factory",
    "check_serving": "paravt.backends.factory",
    "make_backend": "paravt.backends.factory",
    "HFBackend": "paravt.backends.hf",
    "OpenAIBackend": "paravt.backends.openai",
    "ScriptedBackend": "paravt.backends.scripted",
}

__all__ = sorted(_EXPORTS)

#: the protocol's names, re-exported here after they moved to the engine's room; TRL's rule
_DEPRECATED = {name: "paravt.agent.backend" for name in ("Backend", "BackendBase", "check_backend")}


def __getattr__(name: str):
    if name in _DEPRECATED:
        deprecated(f"paravt.backends.{name}", f"import it from {_DEPRECATED[name]}")
        return getattr(importlib.import_module(_DEPRECATED[name]), name)
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'paravt.backends' has no attribute {name!r}")
