"""The one place a backend is built from configuration.

- ``make_backend(BackendConfig, script=None)``: ``hf`` or ``openai`` (``paravt infer``/``eval``),
  or a ``ScriptedBackend`` replaying a JSON file (``--backend scripted --script FILE``);
- ``backend_from_spec(spec, options, processor)``: a backend named by a string in a recipe
  (``scripted``, ``hf`` or an import path ``module:Attr``) and built over the caller's
  processor, so its token ids are the caller's (``paravt sft``'s ``trajectories.backend``).

A backend satisfies ``paravt.agent.backend.Backend`` (``generate`` and the members the engine
reads; ``BackendBase`` holds their defaults); ``backend_from_spec`` checks that. The trainer's
samplers (``paravt.rollout.policy``, ``paravt.rollout.vllm``) are built by the trainer from its
own model and TRL's generator, which no config names.
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any

from paravt.agent.backend import BACKEND_MEMBERS, Backend, BackendBase
from paravt.agent.config import BackendConfig, EngineConfig
from paravt.backends.hf import HFBackend
from paravt.backends.openai import OpenAIBackend
from paravt.backends.scripted import ScriptedBackend, from_script_file
from paravt.config import build
from paravt.errors import ConfigError

#: the backends ``backend_from_spec`` knows by name (besides an import path ``module:Attr``)
SPEC_NAMES = ("scripted", "hf")


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


# -- a backend named in a recipe -----------------------------------------------------------------
def _scripted(options: dict, processor: Any, section: str) -> ScriptedBackend:
    opts = dict(options)
    script = opts.pop("script", None)
    if script is None:
        raise ConfigError(
            f"{section}.backend=scripted needs {section}.options.script (a list of turns, "
            "a mapping of row id to turns, or a JSON file holding either)"
        )
    if isinstance(script, str):
        try:
            script = json.loads(Path(script).read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"{section}.options.script={script}: not a JSON file ({e})") from e
    return ScriptedBackend(script, processor=processor, **opts)


def _hf(options: dict, processor: Any, section: str) -> Backend:
    backend = make_backend(
        build(BackendConfig, {**options, "kind": "hf"}, prefix=f"{section}.options.")
    )
    if backend.codec is None:  # the hf backend always works in token space
        raise ConfigError(f"{section}.backend=hf: the teacher has no tokenizer")
    teacher = backend.codec.tokenizer.get_vocab()
    if teacher != getattr(processor, "tokenizer", processor).get_vocab():
        raise ConfigError(
            f"{section}.backend=hf: the teacher's tokenizer differs from the student's; its "
            "token ids would mean other words to the student (use a teacher of the same family)"
        )
    return backend


def _imported(spec: str, options: dict, processor: Any, section: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise ConfigError(
            f"{section}.backend={spec}: cannot import {attr!r} from {module_name!r} ({e})"
        ) from e
    kwargs = dict(options)
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable: pass the options only
        params = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    if ("processor" in params or takes_any) and "processor" not in kwargs:
        kwargs["processor"] = processor
    try:
        return factory(**kwargs)
    except TypeError as e:
        raise ConfigError(f"{section}.backend={spec}: bad {section}.options ({e})") from e


def backend_from_spec(
    spec: str, options: dict, processor: Any, *, section: str = "backend"
) -> Backend | None:
    """The backend ``spec`` names, built over ``processor``: ``scripted`` (``options.script``),
    ``hf`` (``options`` are ``BackendConfig`` keys; the teacher must share the processor's
    vocabulary) or ``module:Attr`` (a factory given ``options``, and ``processor=`` when it takes
    it). ``openai`` gives None: a chat server returns text, never token ids. Anything else, or a
    factory's result that lacks the protocol's members, is a ``ConfigError`` naming
    ``{section}.backend``."""
    if spec == "scripted":
        backend = _scripted(options, processor, section)
    elif spec == "hf":
        backend = _hf(options, processor, section)
    elif ":" in spec:
        backend = _imported(spec, options, processor, section)
    elif spec == "openai":
        return None
    else:
        raise ConfigError(
            f"{section}.backend={spec!r}: use {' or '.join(SPEC_NAMES)}, or an import "
            "path module:Attr (e.g. paravt.toy.oracle:ToyOracleBackend)"
        )
    if not isinstance(backend, Backend):
        missing = [name for name in BACKEND_MEMBERS if not hasattr(backend, name)]
        raise ConfigError(
            f"{section}.backend={spec}: {type(backend).__name__} is not a backend (it has no "
            f"{', '.join(missing)}); subclass paravt.agent.backend.BackendBase"
        )
    return backend


__all__ = ["Backend", "BackendBase", "backend_from_spec", "check_serving", "make_backend"]
