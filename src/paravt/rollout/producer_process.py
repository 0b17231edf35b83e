"""The producer's sampling in a child process (``trainer.producer: process``).

Why: with the producer as threads of the trainer (``trainer.producer: thread``) the rollout's
CPU work (video decode, frames into pixel rows, tokenising, JSON, up to 64 request threads)
competes with the learner for cores and the GIL; the staleness sweep measured the learner's
step 9-60% slower at k >= 1 than at k = 0. TRL's async trainer runs its rollout worker in a
child process; so does this.

One child a trainer rank (not one a node): each rank's producer already runs its own share of
the step's groups against the server with its own gate, so a child a rank keeps the staleness
accounting and the step-order hand-over exactly as they are, needs no routing of groups back to
ranks, and dies with its rank (a rank that fails stops its own child, and the ranks' handshake
stops the others).

What crosses, and how:

- parent -> child, a queue of commands: ``run`` (a job id and the step's ``EpisodeInput`` list:
  the parent gates K, cheap), ``pause`` (a push starts: new turns wait; the child answers how
  many turns were running), ``resume`` (the push landed: turns start again, tagged with the new
  version), ``close``;
- child -> parent, a queue of replies: a job's ``EpisodeRecord`` list (token ids, sampler
  log-probs, each turn's version, the frames' pixel rows and grids) or its failure. The queue is
  ``torch.multiprocessing``'s: tensors travel as shared memory (the pickle carries a handle, not
  the pixels), so the hand-over costs a pickle of the records' Python objects (8-46 ms a step
  in ``benchmarks/bench_staleness_sweep.py --producers thread process``);
- child -> parent -> child, a server's rejoin: a server that answers again after an outage
  rejoins the child's pool only once the learner's pool (which knows the step's weights and
  checks them) has reloaded it (``_Rejoins``).

The parent keeps the step order, the version bound and the staleness checks
(``paravt.rollout.producer``): its producer threads only wait on the child's replies.

A child that dies is one line (``ProducerProcessError``, its pid and exit code) raised where the
learner takes the step; a child never outlives its trainer: it asks the kernel for SIGKILL when
its parent dies (``PR_SET_PDEATHSIG``, Linux) and watches its parent's pid as well.
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import os
import pickle
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from paravt.errors import ParavtError
from paravt.rollout.gate import GateClosedError, PolicyGate

if TYPE_CHECKING:
    from paravt.rollout.vllm_server_client import VLLMServerClient

__all__ = ["ChildGate", "ChildSpec", "ProducerProcessError", "RolloutChild"]

logger = logging.getLogger(__name__)


class ProducerProcessError(ParavtError):
    """The rollout process died (killed, out of memory, an interpreter crash) or could not
    start: the run stops, naming its pid and exit code."""


@dataclass
class ChildSpec:
    """What the child needs to sample on its own (picklable): the servers and the pool's
    settings, the sampling settings, the processor, the engine's config (resolved for training)
    and the version the run starts at."""

    urls: list[str]
    pool: dict[str, Any]
    sampling: dict[str, Any]
    processing_class: Any
    engine: Any
    eos_token_ids: list[int]
    suppress_vision_tokens: bool
    first_turn_text: str | None
    keep_subagent_frames: bool
    version: int
    log_level: int = logging.WARNING
    extra: dict[str, Any] = field(default_factory=dict)


class _Queue(Protocol):
    """The two ends of a ``multiprocessing`` queue this module uses."""

    def put(self, obj: object) -> None: ...

    def get(self, block: bool = True, timeout: float | None = None) -> tuple: ...


class _NoPush:
    """The child's weight push: there is none (the learner pushes; module doc)."""

    def __call__(self, *args, **kwargs):  # pragma: no cover - never called
        raise RuntimeError("the rollout process does not push weights")


def _die_with_parent(parent: int) -> None:
    """SIGKILL when the parent dies (Linux), and a watcher thread for the rest."""
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except OSError:  # pragma: no cover - no libc
            pass
    if os.getppid() != parent:  # the parent died before the prctl
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="paravt-parent-watch", daemon=True).start()


def _picklable(error: BaseException) -> BaseException:
    """``error``, or its line as a ``ParavtError`` where it does not pickle (the queue pickles
    on a feeder thread: a failure there would lose the reply and hang the learner)."""
    try:
        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - any pickling failure
        return ParavtError(f"{type(error).__name__}: {error}")
    return error


class _Rejoins:
    """The child's ``ServerPool.rejoin``: a server that answers again is made to hold the step's
    weights by the learner's pool (it knows the step's folder and checks the weights), asked
    through the reply queue; the watcher thread that asks waits for the answer."""

    def __init__(self, replies: _Queue):
        self._replies, self._ids = replies, itertools.count()
        self._waiting: dict[int, tuple[threading.Event, list]] = {}
        self._lock = threading.Lock()

    def ask(self, client: VLLMServerClient) -> str:
        from paravt.rollout.vllm_servers import NotReady

        token, done, answer = next(self._ids), threading.Event(), []
        with self._lock:
            self._waiting[token] = (done, answer)
        self._replies.put(("rejoin", token, client.base_url))
        if not done.wait(600):
            raise NotReady("the learner did not answer the rejoin")
        kind, what = answer[0]
        if kind == "later":
            raise NotReady(what)
        if kind == "refused":
            raise RuntimeError(what)
        return what

    def answer(self, token: int, kind: str, what: str) -> None:
        with self._lock:
            done, answer = self._waiting.pop(int(token))
        answer.append((kind, what))
        done.set()


def _child_main(spec: ChildSpec, commands: _Queue, replies: _Queue, parent: int) -> None:
    """The child: a backend of its own over the servers, a gate of its own, one thread a job."""
    _die_with_parent(parent)
    logging.basicConfig(level=spec.log_level)
    try:
        from paravt.agent.engine import EpisodeEngine
        from paravt.rollout.vllm import VLLMBackend
        from paravt.rollout.vllm_server import ServerGeneration
        from paravt.rollout.vllm_servers import pool_of

        pool = pool_of(spec.urls, **spec.pool)
        generator = ServerGeneration(pool, _NoPush(), **spec.sampling)  # type: ignore[arg-type]
        backend = VLLMBackend(
            generator, spec.processing_class, eos_token_ids=spec.eos_token_ids,
            suppress_vision_tokens=spec.suppress_vision_tokens,
            first_turn_text=spec.first_turn_text,
        )  # fmt: skip
        gate = PolicyGate(spec.version)
        backend.gate = gate
        backend.loaded_step = spec.version
        rejoins = _Rejoins(replies)
        pool.rejoin = rejoins.ask
    except BaseException as e:  # noqa: BLE001 - handed to the parent
        replies.put(("failed", None, _picklable(e)))
        return
    replies.put(("ready", None, os.getpid()))

    def run(job: int, inputs: list) -> None:
        try:
            engine = EpisodeEngine(
                backend, spec.engine, frames_at_budget=True,
                keep_subagent_frames=spec.keep_subagent_frames,
            )  # fmt: skip
            records = engine.run(inputs)
            replies.put(("done", job, (records, time.perf_counter())))
        except GateClosedError:
            replies.put(("closed", job, None))
        except BaseException as e:  # noqa: BLE001 - handed to the parent, raised there
            replies.put(("error", job, _picklable(e)))

    workers: list[threading.Thread] = []
    while True:
        kind, *args = commands.get()
        if kind == "run":
            t = threading.Thread(target=run, args=tuple(args), daemon=True)
            workers.append(t)
            t.start()
        elif kind == "pause":
            replies.put(("paused", None, gate.pause()))
        elif kind == "rejoined":
            rejoins.answer(*args)
        elif kind == "resume":
            gate.resume(int(args[0]))
            backend.loaded_step = int(args[0])
        elif kind == "close":
            gate.close()
            for t in workers:
                t.join(float(args[0]) if args else 60.0)
            backend.close()
            replies.put(("closed-all", None, None))
            return


class RolloutChild:
    """The parent's side of one rollout process: ``run`` a step's episodes there (blocking the
    calling thread only), ``pause``/``resume`` its gate around a push, ``close``."""

    def __init__(
        self,
        spec: ChildSpec,
        *,
        rejoin: Callable[[str], str] | None = None,
        start_timeout_s: float = 300.0,
    ):
        import torch.multiprocessing as mp

        ctx = mp.get_context("spawn")  # no fork of a process with threads and a CUDA context
        self._commands, self._replies = ctx.Queue(), ctx.Queue()
        self.process = ctx.Process(
            target=_child_main, args=(spec, self._commands, self._replies, os.getpid()),
            name="paravt-rollout-process", daemon=True,
        )  # fmt: skip
        #: ``rejoin(url) -> what was done``: the learner's pool makes a server that answers
        #: again hold the step's weights (the child's pool asks; ``_Rejoins``)
        self._rejoin = rejoin
        self.rejoined: list[tuple[str, str]] = []  # (url, answer) of each rejoin, for tests
        self._jobs: dict[int, Future] = {}
        self._paused: queue.Queue[int] = queue.Queue()
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self._closing = False
        #: seconds from the child's put to the parent's get of each job's records (the hand-over)
        self.transfer_s: list[float] = []
        self.process.start()
        kind, value = self._started(start_timeout_s)
        if kind != "ready":
            self.process.join(5)
            if self.process.is_alive():
                self.process.kill()
            raise ProducerProcessError(f"the rollout process could not start: {value}")
        assert isinstance(value, int)  # the child's "ready" carries its pid
        self.pid = value
        self._reader = threading.Thread(
            target=self._read, name="paravt-rollout-reader", daemon=True
        )
        self._reader.start()

    def _started(self, timeout_s: float) -> tuple[str, object]:
        """The child's first reply, or why none came (it died, or took too long)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                kind, _, value = self._replies.get(timeout=0.5)
                return kind, value
            except queue.Empty:
                if not self.process.is_alive():
                    return "failed", f"it exited with code {self.process.exitcode}"
        return "failed", f"no answer in {timeout_s} s"

    def _died(self) -> ProducerProcessError:
        code = self.process.exitcode
        return ProducerProcessError(
            f"the rollout process (pid {self.process.pid}) died with exit code {code}: the run "
            "stops (its log is above; a negative code is the signal that killed it)"
        )

    def _read(self) -> None:
        while True:
            try:
                kind, job, value = self._replies.get(timeout=0.5)
            except queue.Empty:
                if not self.process.is_alive():
                    self._fail(self._died())
                    return
                continue
            except (EOFError, OSError):
                self._fail(self._died())
                return
            if kind == "paused":
                self._paused.put(int(value))
                continue
            if kind == "rejoin":
                threading.Thread(target=self._rejoin_for, args=(job, value), daemon=True).start()
                continue
            if kind == "closed-all":
                return
            with self._lock:
                future = self._jobs.pop(job, None)
            if future is None:
                continue
            if kind == "done":
                records, put_at = value
                self.transfer_s.append(time.perf_counter() - put_at)
                future.set_result(records)
            elif kind == "closed":
                future.set_exception(GateClosedError("the rollout was stopped"))
            else:
                future.set_exception(value)

    def _rejoin_for(self, token: int, url: str) -> None:
        from paravt.rollout.vllm_server_client import ServerUnreachable
        from paravt.rollout.vllm_servers import NotReady

        if self._rejoin is None:
            answer = ("ok", "no weights check")
        else:
            try:
                answer = ("ok", self._rejoin(url))
            except (NotReady, ServerUnreachable) as e:
                answer = ("later", str(e))
            except Exception as e:  # noqa: BLE001 - the child keeps the server out, naming it
                answer = ("refused", f"{type(e).__name__}: {e}")
        self.rejoined.append((url, answer[0]))
        if self._error is None and not self._closing:
            self._commands.put(("rejoined", token, *answer))

    def _fail(self, error: BaseException) -> None:
        with self._lock:
            if self._closing and self._error is None:
                error = GateClosedError("the rollout was stopped")
            self._error = error
            jobs, self._jobs = list(self._jobs.values()), {}
        for f in jobs:
            f.set_exception(error)
        self._paused.put(0)  # a pause waiting for its answer stops waiting

    def run(self, inputs: list) -> list:
        """One step's episodes, run in the child; its failure (or its death) raised here."""
        future: Future = Future()
        with self._lock:
            if self._error is not None:
                raise self._error
            job = next(self._ids)
            self._jobs[job] = future
        self._commands.put(("run", job, inputs))
        return future.result()

    def pause(self, timeout_s: float = 60.0) -> int:
        """Stop the child's new turns; how many were running (they cross the push)."""
        if self._error is not None or self._closing:
            return 0
        self._commands.put(("pause",))
        try:
            return self._paused.get(timeout=timeout_s)
        except queue.Empty as e:
            raise ProducerProcessError(
                f"the rollout process (pid {self.pid}) did not answer a pause in {timeout_s} s"
            ) from e

    def resume(self, version: int) -> None:
        if self._error is None and not self._closing:
            self._commands.put(("resume", int(version)))

    def close(self, timeout_s: float = 60.0) -> None:
        """Stop the child after the turns under way; killed if it does not stop in time."""
        with self._lock:
            self._closing = True
        if self.process.is_alive():
            self._commands.put(("close", timeout_s))
            self.process.join(timeout_s + 5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5)
        self._fail(GateClosedError("the rollout was stopped"))


class ChildGate(PolicyGate):
    """The learner's gate when the producer samples in a child: its version and pause are also
    the child's (the child's requests hold the child's turns; this gate's turns are the
    learner's own requests, a group sampled again)."""

    def __init__(self, version: int, child: RolloutChild):
        super().__init__(version)
        self.child = child

    def pause(self, timeout_s: float | None = None) -> int:
        here = super().pause(timeout_s)
        there = self.child.pause()
        with self._cond:
            self.crossed += there
        return here + there

    def resume(self, version: int) -> None:
        self.child.resume(version)
        super().resume(version)

    def close(self) -> None:
        """Refuse new turns here and stop the child: its turns under way get a few seconds (their
        episodes are dropped anyway: the run ends or failed), then it is killed."""
        super().close()
        self.child.close(timeout_s=10.0)
