"""A backend that replays given completions: deterministic episodes without a trained model.

Why: with random tiny weights the generated text is noise, yet the engine's behaviour (parallel
calls, malformed blocks, calls over the cap, windows outside the video, a missing answer, a failed
request) must be exercised and asserted. ``ScriptedBackend`` answers every ``GenRequest`` from a
script and behaves like a real token-space backend when given a processor: it returns generated
token ids (ending with the stop token, like a model that stopped), honours ``max_new_tokens`` (a
long completion is cut and reported as ``finish_reason="length"``), and can return logprobs.

Script forms:
- ``list[str]``: the same turns for every episode (turn n gets item n);
- ``dict[episode_id, list[str]]``: per episode;
- a callable ``(GenRequest) -> str | Generation``.
An item may be a ``Generation`` (e.g. ``Generation(error="boom")`` to simulate a failed request).
Sub-agent requests get ``subagent`` (a string or a callable). Running out of script is reported as
a generation error, which the engine records as an episode error.

It is a backend like ``hf`` and ``openai``, and users use it: ``paravt eval --backend scripted
--script FILE`` replays a JSON file (``from_script_file``, reached through
``paravt.backends.make_backend``), and ``paravt sft`` plays cold-start trajectories with
it. ``paravt.toy.oracle`` builds on it (the toy oracle is a scripted policy whose script is a
function of the request).

Serves the engine's needs: token ids when given a processor (else messages only);
fake logprobs when asked (``logprobs=True``). It reads neither images nor pixel rows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from paravt.agent.backend import BackendBase
from paravt.agent.chat import ChatCodec
from paravt.errors import UserError
from paravt.schema.episodes import Generation, GenRequest

__all__ = ["ScriptedBackend"]

Script = "list[str] | dict[str, list[str]] | Callable[[GenRequest], Any]"


class ScriptedBackend(BackendBase):
    """Replays scripted completions. ``processor`` (or a model folder) turns on token space.

    ``tokenize="pieces"`` encodes each completion in 3-character pieces — a tokenization no
    tokenizer would produce from the whole text — so a test can prove the engine never
    re-tokenizes generated text. ``logprobs=True`` returns a distinct fake logprob per token.
    """

    name = "scripted"

    def __init__(
        self,
        script: Any,
        processor: Any = None,
        subagent: str | Callable[[GenRequest], str] = "The window shows a person moving in a room.",
        tokenize: str = "canonical",
        logprobs: bool = False,
        stop: bool = True,
    ):
        self.script = script
        self.subagent = subagent
        self.tokenize = tokenize
        self.want_logprobs = logprobs
        self.stop = stop
        self.codec = None
        if processor is not None:
            if isinstance(processor, (str, Path)):
                from transformers import AutoProcessor

                processor = AutoProcessor.from_pretrained(str(processor))
            self.codec = processor if isinstance(processor, ChatCodec) else ChatCodec(processor)
        #: Every ``generate`` call's requests, in order (tests assert batching with it).
        self.batches: list[list[GenRequest]] = []
        #: The generations returned for each batch.
        self.outputs: list[list[Generation]] = []

    # -- script lookup ---------------------------------------------------------------------
    def _item(self, req: GenRequest) -> Any:
        if req.role == "subagent":
            return self.subagent(req) if callable(self.subagent) else self.subagent
        script = self.script
        if callable(script):
            return script(req)
        turns = script.get(req.episode_id) if isinstance(script, dict) else script
        if turns is None:
            return Generation(
                error=f"scripted backend has no script for episode {req.episode_id!r}",
                finish_reason="error",
            )
        if req.turn >= len(turns):
            return Generation(
                error=f"script of episode {req.episode_id!r} has no turn {req.turn} ({len(turns)} given)",
                finish_reason="error",
            )
        return turns[req.turn]

    def _encode(self, text: str) -> list[int]:
        codec = self.codec
        if codec is None:
            raise RuntimeError("the scripted backend encodes text only with a processor")
        if self.tokenize == "pieces":
            ids: list[int] = []
            for i in range(0, len(text), 3):
                ids.extend(codec.encode_text(text[i : i + 3]))
            return ids
        return codec.encode_text(text)

    def _one(self, req: GenRequest) -> Generation:
        item = self._item(req)
        if isinstance(item, Generation):
            if item.error is not None or self.codec is None or item.token_ids is not None:
                return item
            text = item.text
        else:
            text = str(item)
        if self.codec is None:
            words = len(text.split())
            if words > req.max_new_tokens:
                text = " ".join(text.split()[: req.max_new_tokens])
                return Generation(
                    text=text, finish_reason="length", completion_tokens=req.max_new_tokens
                )
            return Generation(text=text, finish_reason="stop", completion_tokens=words)
        ids = self._encode(text)
        finish = "stop"
        if self.stop:
            ids = ids + [self.codec.end_of_turn_id]
        if len(ids) > req.max_new_tokens:
            ids = ids[: req.max_new_tokens]
            finish = "length"
            text = self.codec.decode([i for i in ids if i not in self.codec.stop_ids])
        lps = [-0.001 * (i + 1) for i in range(len(ids))] if self.want_logprobs else None
        return Generation(
            text=text,
            token_ids=ids,
            logprobs=lps,
            finish_reason=finish,  # type: ignore[arg-type]
            prompt_tokens=len(req.tokens.ids) if req.tokens is not None else None,
            completion_tokens=len(ids),
        )

    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        self.batches.append(list(requests))
        out = [self._one(r) for r in requests]
        self.outputs.append(out)
        return out


class _Paced(BackendBase):
    """Wraps a backend so each ``generate`` call takes at least ``delay_s`` (a slow model)."""

    def __init__(self, inner: Any, delay_s: float):
        self.inner, self.delay_s = inner, delay_s
        self.codec = inner.codec
        self.name = getattr(inner, "name", type(inner).__name__)

    def generate(self, requests: list) -> list:
        time.sleep(self.delay_s)
        return self.inner.generate(requests)


def from_script_file(path: str | Path) -> Any:
    """``ScriptedBackend`` replaying a JSON script file (smoke tests, CI, kill/resume tests).

    The file holds a list of turn texts used for every episode, or a mapping of sample id to its
    list of turns, or ``{"turns": <either>, "delay_s": seconds}`` to pace each generate call like
    a slow model; an item ``{"error": "…"}`` is a failed generation (as a real server error).
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise UserError(f"--script {path}: cannot read a JSON script ({e})") from None
    delay = 0.0
    if isinstance(data, dict) and "turns" in data:
        delay = float(data.get("delay_s", 0.0))
        data = data["turns"]

    def item(x):
        if isinstance(x, dict) and "error" in x:
            return Generation(error=str(x["error"]), finish_reason="error")
        return str(x)

    if isinstance(data, list):
        script = [item(x) for x in data]
    elif isinstance(data, dict):
        script = {
            str(k): [item(x) for x in (v if isinstance(v, list) else [v])] for k, v in data.items()
        }
    else:
        raise UserError(
            f"--script {path}: expected a JSON list of turns or an object of id → turns"
        )
    backend = ScriptedBackend(script)
    return _Paced(backend, delay) if delay > 0 else backend
