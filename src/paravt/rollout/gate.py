"""The policy version every sampled turn was drawn under, and the pause a weight push needs.

Why: with bounded staleness (``trainer.max_staleness = k >= 1``) rollouts for later steps run
while the trainers learn, and the server's weights change under them at every push. A turn must
be sampled entirely under one set of weights, and the learner must know which: the decoupled
loss weighs each token by how far the policy has moved since (``paravt.rollout.staleness``).

``PolicyGate`` is the one place that knows. A sampling request holds a *turn* for as long as it
runs; a push *pauses* the gate, which stops new turns from starting and waits for the running
ones to end, moves the weights, then *resumes* at the new version. So every turn records the
version that sampled all of its tokens, and no turn straddles a push. An episode whose turns
are on both sides of a push keeps going under the new weights (a partial rollout): its turns
carry their versions, and the loss treats each token by its own (``staleness``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from paravt.errors import ParavtError

__all__ = ["PolicyGate"]


class PolicyGate:
    """Turns in flight, the current policy version, and the pause around a push.

    Thread-safe: the producer's episode threads hold turns, the trainer's thread pauses and
    resumes. ``version`` starts at the version the run starts from (the step it resumes at)."""

    def __init__(self, version: int = 0):
        self._cond = threading.Condition()
        self._version = int(version)
        self._paused = False
        self._active = 0
        self._closed = False

    @property
    def version(self) -> int:
        with self._cond:
            return self._version

    @contextmanager
    def turn(self) -> Iterator[int]:
        """Hold one sampling request: waits while a push is under way, then yields the version
        the request samples under (it cannot change before the request ends)."""
        with self._cond:
            self._cond.wait_for(lambda: not self._paused or self._closed)
            if self._closed:
                raise GateClosedError("the rollout was stopped")
            self._active += 1
            version = self._version
        try:
            yield version
        finally:
            with self._cond:
                self._active -= 1
                self._cond.notify_all()

    def pause(self, timeout_s: float | None = None) -> None:
        """Stop new turns and wait for the running ones to end (a push comes next)."""
        with self._cond:
            self._paused = True
            if not self._cond.wait_for(lambda: self._active == 0, timeout=timeout_s):
                self._paused = False
                self._cond.notify_all()
                raise TimeoutError(
                    f"{self._active} sampling requests still running after {timeout_s} s"
                )

    def resume(self, version: int) -> None:
        """The new weights are on the server: turns start again, at ``version``."""
        with self._cond:
            self._version = int(version)
            self._paused = False
            self._cond.notify_all()

    def wait_for_version(self, version: int) -> bool:
        """Block until the current version is at least ``version`` (the producer may start a
        later step's rollout); ``False`` if the gate was closed meanwhile."""
        with self._cond:
            self._cond.wait_for(lambda: self._version >= version or self._closed)
            return not self._closed

    def close(self) -> None:
        """Wake and refuse every waiter (the run ends or failed)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class GateClosedError(ParavtError):
    """A sampling request was refused because the rollout stopped. A paravt error, so the
    episode engine ends the run on it (the producer stops there) instead of failing the one
    request (``paravt.agent.async_engine``)."""
