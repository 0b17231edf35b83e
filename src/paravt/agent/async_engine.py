"""Episodes that advance on their own: one coroutine per episode, gathered with asyncio.

Why: in synchronous rounds every episode of a batch waits for the slowest generation of the round
before any tool runs, and the sampler idles while the tools run. Here each episode loops on its own
— generate, parse, run its calls, append the tool turn, generate again — so its next turn is
submitted as soon as its tools return, and the video pass of one episode overlaps the generation
of the others (on a GPU host: decoding on the CPU while the GPU samples).

Every step is the engine's own (``EpisodeEngine._main_request``, ``_take_turn``, ``_execute``,
``_summary_requests``/``_summary_results``, ``_tool_turn``), the ones its rounds use, so the two
drivers cannot drift apart: under greedy decoding they write the same records, token for token.

- Generation: ``backend.agenerate(request)`` where the backend has it (many requests in flight:
  the openai backend's HTTP lanes, vLLM's async engine); otherwise the backend's ``generate`` on
  one request at a time, on a thread of its own (a local model is not shared between threads).
- The engine's CPU steps (building a request, which preprocesses its new images; parsing; the
  video pass; rendering a tool turn) run on one engine lane, one step at a time, so the engine's
  shared state (the run's open video sources, the window images of a pass) is never touched by
  two threads at once; the event loop only waits.
- Tools: calls of episodes that reach their tools while a video pass runs wait for it and then go
  in one pass together (``_Batcher``), so windows stay de-duplicated across episodes and each
  video is decoded by one decoder, as in a round.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from paravt.errors import ParavtError
from paravt.schema.episodes import Generation, GenRequest

__all__ = ["run_episodes"]

logger = logging.getLogger(__name__)


class _Batcher:
    """Runs ``fn(items)`` on the engine lane for everything submitted while the previous call
    ran: the first caller starts a pass, the ones that arrive during it share the next one. Every
    caller of a pass gets the pass's whole result."""

    def __init__(self, fn: Callable[[list], Any], lane: Callable[..., Any]):
        self.fn = fn
        self.lane = lane
        self.waiting: list[tuple[list, asyncio.Future]] = []
        self.task: asyncio.Task | None = None

    async def submit(self, items: list) -> Any:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.waiting.append((items, future))
        if self.task is None:
            self.task = loop.create_task(self._drain())
        return await future

    async def _drain(self) -> None:
        try:
            while self.waiting:
                todo, self.waiting = self.waiting, []
                merged = [item for items, _ in todo for item in items]
                try:
                    result = await self.lane(self.fn, merged)
                except Exception as e:  # noqa: BLE001 - raised again in every caller of the pass
                    for _, future in todo:
                        future.set_exception(e)
                    continue
                for _, future in todo:
                    future.set_result(result)
        finally:
            self.task = None


class _Steps:
    """What the episode coroutines share: the engine lane, the generation path, the tool passes."""

    def __init__(self, engine: Any, lane_pool: ThreadPoolExecutor, gen_pool: ThreadPoolExecutor):
        self.engine = engine
        self.lane_pool = lane_pool
        self.gen_pool = gen_pool
        self.agenerate = engine.backend.agenerate  # None: generate on a thread, one at a time
        self.tools = _Batcher(engine._execute, self.lane)

    async def lane(self, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` on the engine lane."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.lane_pool, functools.partial(fn, *args))

    async def generate(self, req: GenRequest) -> Generation:
        """One request's generation; a backend that raises fails this request only, except with
        a paravt error (a server still gone after its retries, a prompt vLLM ran otherwise than
        sent): that stops the run, as it does in rounds, so no episode is scored in silence as a
        failure the model never made."""
        try:
            if self.agenerate is not None:
                return await self.agenerate(req)
            loop = asyncio.get_running_loop()
            gens = await loop.run_in_executor(self.gen_pool, self.engine._generate, [req])
            return gens[0]
        except ParavtError:
            raise
        except Exception as e:  # noqa: BLE001 - one failed request is its episode's error only
            logger.warning("generation failed for %s", req.key, exc_info=True)
            return Generation(error=f"{type(e).__name__}: {e}", finish_reason="error")


async def _episode(steps: _Steps, ep: Any) -> None:
    """One episode to its answer (or error), then the backend frees what it kept of it (its KV
    cache: ``Backend.end_episodes``) on the thread its generations ran on."""
    try:
        await _turns(steps, ep)
    finally:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(steps.gen_pool, steps.engine.backend.end_episodes, [ep.key])


async def _turns(steps: _Steps, ep: Any) -> None:
    """The engine's round, for this episode alone."""
    engine = steps.engine
    for _ in range(engine.max_rounds):
        if ep.done:
            return
        req = await steps.lane(engine._main_request, ep)
        gen = await steps.generate(req)
        planned = await steps.lane(engine._take_turn, ep, req, gen)
        if planned is None:
            return
        batch = await steps.tools.submit([(ep, planned)])
        if engine.config.evidence == "subagent":
            own = type(batch)(
                owners=[o for o in batch.owners if o[0] is ep],
                frames_of=batch.frames_of,
                items=batch.items,  # shared: a window asked by several episodes is built once
            )
            jobs, requests = await steps.lane(engine._summary_requests, own)
            gens = await asyncio.gather(*(steps.generate(r) for r in requests))
            await steps.lane(engine._summary_results, jobs, requests, list(gens))
        await steps.lane(engine._tool_turn, ep, planned, batch)
        ep.turn += 1


async def _run_all(engine: Any, episodes: list) -> None:
    with (
        ThreadPoolExecutor(1, thread_name_prefix="paravt-engine") as lane_pool,
        ThreadPoolExecutor(1, thread_name_prefix="paravt-generate") as gen_pool,
    ):
        steps = _Steps(engine, lane_pool, gen_pool)
        tasks = [asyncio.ensure_future(_episode(steps, ep)) for ep in episodes if not ep.done]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            # the first error stops the run: the other episodes are cancelled and awaited here,
            # so none is left to fail later on closed pools (an unretrieved task's traceback)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise


def run_episodes(engine: Any, episodes: list) -> None:
    """Advance every episode of ``episodes`` (``EpisodeEngine``'s) on its own until it is done.

    Runs an event loop of its own; a caller that already runs one (a notebook, an async server)
    cannot be blocked inside it, so there the loop runs on a thread of its own and this call
    waits for it."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(_run_all(engine, episodes))
        return
    with ThreadPoolExecutor(1, thread_name_prefix="paravt-episodes") as pool:
        pool.submit(asyncio.run, _run_all(engine, episodes)).result()
