"""Several vLLM servers behind one client, and a rollout that outlives their outages.

``ServerPool`` has the surface of one ``VLLMServerClient`` that the server-mode generator uses
(``generate``, ``generate_many``, ``reload_weights``, ``max_concurrency``), over one or several
servers (``trainer.vllm_server_base_url``: one URL or a list).

Routing. A request's route key is its episode id (``episode_route``, which ``VLLMBackend`` sets
around every request of an episode; GRPO's generations of one prompt share it, and so share their
first turn's prefix). The first request of a key goes to the live server with the fewest requests
in flight (ties: a rendezvous hash of key and server), every later one to the same server while
it lives (sticky), so an episode's turns meet the server whose prefix cache holds their context.
A key whose server went down moves to another live one. The map is cleared at every weight push
(the push empties every prefix cache). A request without a key (synchronous rounds) is keyed by
the head of its prompt: its tokens before the first frame and that frame's content hash.

Outages. A server whose request fails with ``ServerUnreachable`` (refused, broken, no answer
within the request timeout, busy past its retries), or whose ``/health`` misses two polls in a
row (a watcher thread polls every server each ``poll_s`` from the first push on, so a server
killed and restarted between two requests is caught as well), is down: one log line names it, what happened and how many of its
requests were in flight; they are resubmitted, to another live server or, when none is live,
once one is back. While no server is live, requests wait. A down server whose ``/health``
answers again rejoins only once it holds the step's weights: ``rejoin`` (set by the server-mode
generator, ``paravt.rollout.vllm_server``) probes it and, where its logprobs are not the
policy's, has it reload the step's weight folder and probes again; one log line says it is back,
after how long, what was done, and how many requests were resubmitted. An episode's requests are
answered once each (a resubmitted request had no answer), and every server holds the step's
weights, so no episode is counted twice or mixes two weight versions.

The time with no live server counts against ``outage_budget_s`` (summed over one step, reset at
each push); past it every waiting request raises ``VLLMOutageError``, one line naming every
server, how long it was away and why. ``stop`` (a callable: a reason to stop, or None) ends every
request, and every wait, with ``RolloutStopped`` once the trainer was asked to stop (SIGTERM).

Deadline. Each route key (an episode and its group's other generations) has ``deadline_s`` of
server time from its first request: the wall clock less the step's outages, which the budget
bounds on its own. A request of a key past it raises ``VLLMServerError`` instead of being sent.
Together the two bound how long one rank's rollout can keep the others waiting in a collective
(``ParaGRPOConfig`` refuses a deadline plus budget at or above ``ddp_timeout``).
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from paravt.rollout.vllm_server_client import (
    ServerReply,
    ServerUnreachable,
    VLLMServerClient,
    VLLMServerError,
)

__all__ = ["ServerPool", "as_list"]

logger = logging.getLogger(__name__)

_route: ContextVar[str | None] = ContextVar("paravt_vllm_route", default=None)


@contextmanager
def episode_route(key: str | None) -> Iterator[None]:
    """Route the requests made inside to the server of ``key`` (an episode id)."""
    token = _route.set(key)
    try:
        yield
    finally:
        _route.reset(token)


def head_key(token_ids: Sequence[int], images: Sequence[tuple[str, str]], pad: int) -> str:
    """The route key of a request with none: its tokens before the first frame (``pad``, the
    image pad) and the first frame's content hash."""
    ids = list(token_ids)
    cut = ids.index(pad) if pad in ids else min(len(ids), 256)
    digest = images[0][1] if images else ""
    return hashlib.sha1(f"{ids[:cut]}|{digest}".encode()).hexdigest()


class VLLMOutageError(VLLMServerError):
    """No vLLM server answered within the run's outage budget."""


class RolloutStopped(VLLMServerError):
    """The run was asked to stop (``stop``) while its rollout ran: every request ends."""


class NotReady(Exception):
    """Raised by a ``rejoin`` that should be tried again at the next poll (another rank is
    still pushing the weights to the server)."""


@dataclass
class _Server:
    client: VLLMServerClient
    live: bool = True
    load: int = 0  # this process's requests in flight there
    down_since: float = 0.0
    why: str = ""
    refused: str = ""  # answers again, but cannot hold the step's weights
    resubmitted: int = 0  # requests of its outage sent again
    missed: int = 0  # /health polls missed in a row

    @property
    def url(self) -> str:
        return self.client.base_url


def _rank(key: str, index: int) -> int:
    return int.from_bytes(hashlib.sha1(f"{key}#{index}".encode()).digest()[:8], "big")


class ServerPool:
    """One or several vLLM servers (module doc). ``outage_budget_s``: seconds a step may spend
    with no live server; ``poll_s``: the watcher's interval; ``sticky``: route by key (False:
    round robin, for the prefix-cache benchmark); ``image_pad``: the image pad's id (route keys
    of requests without one)."""

    def __init__(
        self,
        clients: Sequence[VLLMServerClient],
        *,
        outage_budget_s: float = 600.0,
        poll_s: float = 1.0,
        sticky: bool = True,
        image_pad: int = -1,
        deadline_s: float | None = None,
        stop: Callable[[], str | None] | None = None,
    ):
        if not clients:
            raise ValueError("ServerPool needs at least one server")
        self.servers = [_Server(c) for c in clients]
        self.outage_budget_s, self.poll_s = float(outage_budget_s), float(poll_s)
        self.sticky, self.image_pad, self.stop = sticky, image_pad, stop
        self.deadline_s = deadline_s
        #: ``rejoin(client) -> what was done``: make a server that answers again hold the step's
        #: weights (raise ``NotReady`` to try again later, anything else to keep it out)
        self.rejoin: Callable[[VLLMServerClient], str] | None = None
        self.folder: str | None = None  # the step's weight folder (folder push)
        self.max_concurrency = sum(c.max_concurrency for c in clients)
        self.resubmitted = 0  # requests sent again after their server went down (for tests)
        self.outages: list[tuple[str, float]] = []  # (server, seconds away), for tests
        self._cond = threading.Condition()
        self._routes: dict[str, int] = {}
        self._first: dict[str, float] = {}  # each key's first request, on the server clock
        self._turn = 0
        self._outage_start: float | None = None
        self._outage_used = 0.0
        self._watcher: threading.Thread | None = None
        self._closed = False
        self._pushing = False  # the main process is pushing: the watcher leaves rejoins to it

    # -- what it holds -----------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return ", ".join(s.url for s in self.servers)

    @property
    def clients(self) -> list[VLLMServerClient]:
        return [s.client for s in self.servers]

    def live(self) -> list[str]:
        with self._cond:
            return [s.url for s in self.servers if s.live]

    def mark_down(self, url: str, why: str) -> None:
        """``url`` is down for a reason found outside the pool (it did not answer the weights
        probe): as if one of its requests had failed; it rejoins once it answers again and
        holds the step's weights (``rejoin``)."""
        for server in self.servers:
            if server.url == url:
                self._start_watcher()
                self._down(server, why)

    # -- requests ----------------------------------------------------------------------------
    def generate(
        self,
        token_ids: Sequence[int],
        images: Sequence[tuple[str, str]],
        sampling: dict,
        *,
        what: str = "",
    ) -> ServerReply:
        """One prompt's reply from the key's server; resubmitted while servers go down."""
        key = _route.get() or head_key(token_ids, images, self.image_pad)
        while True:
            server = self._acquire(key, what)
            try:
                return server.client.generate(token_ids, images, sampling, what=what)
            except ServerUnreachable as e:
                self._down(server, str(e), resubmit=True)
            finally:
                with self._cond:
                    server.load -= 1

    def generate_many(
        self, prompts: list[tuple[Sequence[int], Sequence[tuple[str, str]], dict, str]]
    ) -> list[ServerReply]:
        """``generate`` for each ``(token_ids, images, sampling, what)``, concurrently, in
        order; the first failure is raised."""
        if not prompts:
            return []
        workers = max(1, min(self.max_concurrency, len(prompts)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [
                pool.submit(self.generate, ids, ims, sp, what=w) for ids, ims, sp, w in prompts
            ]
            return [f.result() for f in futures]

    def _server_clock(self) -> float:
        """The wall clock less this step's time with no live server (under the lock)."""
        now = time.monotonic()
        away = self._outage_used + (
            now - self._outage_start if self._outage_start is not None else 0.0
        )
        return now - away

    def _check_deadline(self, key: str, what: str) -> None:
        if self.deadline_s is None:
            return
        first = self._first.setdefault(key, self._server_clock())
        spent = self._server_clock() - first
        if spent > self.deadline_s:
            raise VLLMServerError(
                f"{what or 'a request'} passed its episode's deadline: {spent:.0f} s of server "
                f"time since its first request, over trainer.vllm_episode_deadline_s = "
                f"{self.deadline_s:.0f} s (servers {self.base_url}); the servers are too slow "
                "for this rollout: give them fewer episodes a step, or raise the deadline "
                "(with the outage budget below trainer.ddp_timeout)"
            )

    def _acquire(self, key: str, what: str = "") -> _Server:
        with self._cond:
            while True:
                self._check_stop()
                self._check_deadline(key, what)
                live = [i for i, s in enumerate(self.servers) if s.live]
                if live:
                    self._end_outage()
                    server = self.servers[self._pick(key, live)]
                    server.load += 1
                    return server
                self._wait_for_a_server()

    def _pick(self, key: str, live: list[int]) -> int:
        if not self.sticky:
            self._turn += 1
            return live[self._turn % len(live)]
        i = self._routes.get(key)
        if i is None or not self.servers[i].live:
            i = min(live, key=lambda j: (self.servers[j].load, -_rank(key, j)))
            self._routes[key] = i
        return i

    # -- outages -----------------------------------------------------------------------------
    def _check_stop(self) -> None:
        reason = self.stop() if self.stop is not None else None
        if reason:
            raise RolloutStopped(f"{reason} received during the rollout: its requests stopped")

    def _wait_for_a_server(self) -> None:
        """Under the lock, with no live server: wait a poll, or raise past the budget."""
        now = time.monotonic()
        if self._outage_start is None:
            self._outage_start = now
            logger.warning(
                "no vLLM server answers (%s): the rollout waits for one, up to %.0f s more "
                "(trainer.vllm_outage_budget_s)",
                self._away_text(now),
                self.outage_budget_s - self._outage_used,
            )
        used = self._outage_used + now - self._outage_start
        if used >= self.outage_budget_s:
            raise VLLMOutageError(
                f"no vLLM server answered for {used:.0f} s this step, past the outage budget "
                f"of {self.outage_budget_s:g} s (trainer.vllm_outage_budget_s): "
                f"{self._away_text(now)}. Start the server(s) again and resume the run "
                "(--resume), or raise the budget (below trainer.ddp_timeout)"
            )
        self._start_watcher()
        self._cond.wait(timeout=min(self.poll_s, self.outage_budget_s - used + 0.05))

    def _end_outage(self) -> None:
        if self._outage_start is not None:
            self._outage_used += time.monotonic() - self._outage_start
            self._outage_start = None

    def _away_text(self, now: float) -> str:
        parts = []
        for s in self.servers:
            if s.live:
                continue
            why = f"refused: {s.refused}" if s.refused else s.why
            parts.append(f"{s.url} away for {now - s.down_since:.0f} s ({why})")
        return "; ".join(parts) or "every server"

    def _down(self, server: _Server, why: str, *, resubmit: bool = False) -> None:
        with self._cond:
            if resubmit:
                self.resubmitted += 1
                server.resubmitted += 1
            if not server.live:
                return
            server.live, server.down_since, server.why = False, time.monotonic(), why
            server.refused = ""
            others = [s.url for s in self.servers if s.live]
            where = (
                f"go to {', '.join(others)}"
                if others
                else f"wait for a server, up to {self.outage_budget_s:g} s "
                "(trainer.vllm_outage_budget_s)"
            )
            logger.warning(
                "vLLM server %s is down (%s): its %d request(s) in flight are resubmitted and "
                "new ones %s; it rejoins once it answers again and holds this step's weights",
                server.url,
                why,
                server.load,
                where,
            )
            self._start_watcher()
            self._cond.notify_all()

    def _start_watcher(self) -> None:
        if self._watcher is None or not self._watcher.is_alive():
            self._watcher = threading.Thread(
                target=self._watch, name="paravt-vllm-watch", daemon=True
            )
            self._watcher.start()

    def _watch(self) -> None:
        """Every ``poll_s``: a live server whose ``/health`` fails is down; a down one that
        answers again tries to rejoin."""
        while not self._closed:
            time.sleep(self.poll_s)
            for server in list(self.servers):
                if self._closed:
                    return
                up = server.client.healthy(timeout_s=max(5.0, self.poll_s))
                server.missed = 0 if up else server.missed + 1
                if server.live and server.missed >= 2:  # twice: a busy server's slow answer
                    self._down(server, "/health stopped answering")
                elif not server.live and up and not self._pushing:
                    self._try_rejoin(server)

    def _try_rejoin(self, server: _Server) -> None:
        try:
            done = self.rejoin(server.client) if self.rejoin is not None else "no weights check"
        except (NotReady, ServerUnreachable):
            return
        except Exception as e:  # noqa: BLE001 - kept out, named in the log and the outage error
            if server.refused != str(e):
                logger.warning("vLLM server %s answers again but is kept out: %s", server.url, e)
            server.refused = str(e)
            return
        self._up(server, done)

    def _up(self, server: _Server, done: str) -> None:
        with self._cond:
            if server.live:
                return
            away = time.monotonic() - server.down_since
            server.live, server.refused = True, ""
            self.outages.append((server.url, away))
            logger.warning(
                "vLLM server %s is back after %.0f s (%s); %d request(s) were resubmitted "
                "during its outage",
                server.url,
                away,
                done,
                server.resubmitted,
            )
            server.resubmitted = 0
            self._cond.notify_all()

    # -- weights -----------------------------------------------------------------------------
    def begin_step(self, folder: str | None, holders: Sequence[str] | None = None) -> None:
        """A push happened (every rank): the step's weight folder, the servers that hold its
        weights (None: every live one), a fresh outage budget and route map."""
        with self._cond:
            self._start_watcher()  # a restart between two requests is caught from now on
            self.folder = folder
            self._routes.clear()
            self._first.clear()
            self._outage_used = 0.0
            if self._outage_start is not None:
                self._outage_start = time.monotonic()
            if holders is not None:
                for s in self.servers:
                    if s.url not in holders and s.live:
                        s.live, s.down_since, s.why = False, time.monotonic(), "missed the push"
                    elif s.url in holders and not s.live:
                        s.live, s.refused = True, ""
                        logger.warning("vLLM server %s rejoined with the weight push", s.url)
            self._cond.notify_all()

    def reload_weights(self, folder: str) -> list[str]:
        """The main process's push: every server that answers reloads ``folder``; a down one
        that answers again is pushed to as well (it rejoins once the push is checked), an
        unreachable one is down. With none answering, wait for one within the outage budget.
        Returns the servers that hold the folder's weights now."""
        self.folder = folder
        self._pushing = True
        try:
            while True:
                done = []
                for server in self.servers:
                    if not server.live and not server.client.healthy():
                        continue
                    try:
                        server.client.reload_weights(folder)
                    except ServerUnreachable as e:
                        if e.answered:  # it answered, and failed the reload: a failed push
                            raise
                        self._down(server, str(e))
                        continue
                    done.append(server.url)
                if done:
                    with self._cond:
                        self._end_outage()
                    return done
                with self._cond:  # every server is down: an outage, within the budget
                    self._wait_for_a_server()
        finally:
            self._pushing = False

    def close(self) -> None:
        self._closed = True


def pool_of(
    urls: Sequence[str],
    *,
    timeout_s: float,
    retries: int,
    backoff_s: float,
    outage_budget_s: float,
    deadline_s: float | None = None,
    poll_s: float = 1.0,
    image_pad: int = -1,
    stop: Callable[[], str | None] | None = None,
) -> ServerPool:
    """A pool of one client a URL."""
    clients = [
        VLLMServerClient(u, timeout_s=timeout_s, retries=retries, backoff_s=backoff_s) for u in urls
    ]
    return ServerPool(
        clients, outage_budget_s=outage_budget_s, poll_s=poll_s, image_pad=image_pad,
        deadline_s=deadline_s, stop=stop,
    )  # fmt: skip


def as_list(value: Any) -> list[str]:
    """``vllm_server_base_url`` as a list of URLs (one string, a comma-separated string, a
    list)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [u.strip() for u in value.split(",") if u.strip()]
    return [str(u).strip() for u in value if str(u).strip()]
