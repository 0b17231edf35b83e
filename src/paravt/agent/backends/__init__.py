"""Moved: the backends now live in ``paravt.backends`` (docs/CHANGELOG.md).

This module keeps the names that were public here working: ``Backend``, ``BackendBase``,
``make_backend``, ``check_serving``, ``HFBackend``, ``OpenAIBackend`` and ``ScriptedBackend``.
The submodules (``paravt.agent.backends.hf`` and the others) are gone: import
``paravt.backends.hf`` and its siblings instead.
"""

from __future__ import annotations

from paravt.agent.backend import Backend, BackendBase
from paravt.backends.factory import check_serving, make_backend
from paravt.backends.hf import HFBackend
from paravt.backends.openai import OpenAIBackend
from paravt.backends.scripted import ScriptedBackend

__all__ = [
    "Backend",
    "BackendBase",
    "HFBackend",
    "OpenAIBackend",
    "ScriptedBackend",
    "check_serving",
    "make_backend",
]
