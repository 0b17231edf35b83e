"""paravt's HTTP plumbing, on maintained clients: one pooled ``httpx`` client per process, one
health wait, and one event loop on a thread for the ``openai`` SDK's async client.

- ``http_client()``: the process's one ``httpx2.Client`` (the ``httpx`` line the ``openai`` SDK 3
  is built on; thread-safe, pooled keep-alive connections). The vLLM server client
  (``paravt.rollout.vllm_server_client``) and every health wait send through it; each request
  passes its own timeout.
- ``healthy(url)`` / ``wait_healthy(url, total_s)``: ``GET /health`` answered 200, once or
  polled until a deadline; ``check`` is called between polls and may raise to stop waiting
  early (a server process that exited, a run asked to stop). The one wait of the vLLM server
  client (start, outage), the eval room's server launcher (``paravt.eval.agreement``) and the
  tests.
- ``LoopThread``: an asyncio loop on a daemon thread of its own. ``openai.AsyncOpenAI`` pools its
  connections in the loop it first ran in, while the episode engine runs a fresh loop per
  ``run`` (``asyncio.run``) and ``generate`` is called with no loop at all; so the SDK's client
  lives on this one loop, ``run`` waits for a coroutine from plain code and ``wait`` awaits it
  from any other loop. Requests stay coroutines on one loop: no thread per request.

Retries are not here: the ``openai`` SDK retries its own requests (``max_retries``, exponential
backoff, ``Retry-After``), and the vLLM server client's outage rule lives with it
(``paravt.rollout.vllm_servers``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

import httpx2 as httpx

__all__ = ["LoopThread", "health_url", "healthy", "http_client", "wait_healthy"]

T = TypeVar("T")

#: connections the process keeps: the vLLM client sends up to 64 requests a server at once
LIMITS = httpx.Limits(max_connections=512, max_keepalive_connections=128)

_client: httpx.Client | None = None
_client_lock = threading.Lock()


def http_client() -> httpx.Client:
    """The process's one pooled client (made on first use)."""
    global _client
    with _client_lock:
        if _client is None or _client.is_closed:
            _client = httpx.Client(limits=LIMITS, timeout=httpx.Timeout(600.0))
        return _client


def health_url(base_url: str) -> str:
    """``/health`` of a server given as ``http://HOST:PORT`` or its OpenAI ``.../v1``."""
    return base_url.rstrip("/").removesuffix("/v1") + "/health"


def healthy(base_url: str, timeout_s: float = 5.0) -> bool:
    """True when the server's ``/health`` answers 200 within ``timeout_s``."""
    try:
        return http_client().get(health_url(base_url), timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


def wait_healthy(
    base_url: str,
    total_s: float,
    *,
    interval_s: float = 1.0,
    timeout_s: float = 5.0,
    check: Callable[[], None] | None = None,
) -> bool:
    """Poll ``/health`` until it answers 200 (True) or ``total_s`` seconds have passed (False).
    ``check()`` runs before each poll and may raise to stop the wait."""
    deadline = time.monotonic() + float(total_s)
    while True:
        if check is not None:
            check()
        left = deadline - time.monotonic()
        if healthy(base_url, timeout_s=max(0.1, min(timeout_s, left))):
            return True
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(interval_s, left))


class LoopThread:
    """An asyncio event loop running on a daemon thread of its own (module doc)."""

    def __init__(self, name: str):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro``'s result, from code that runs no loop (or another thread's)."""
        return self.submit(coro).result()

    async def wait(self, coro: Coroutine[Any, Any, T]) -> T:
        """``coro``'s result, awaited from any other event loop."""
        return await asyncio.wrap_future(self.submit(coro))

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()
