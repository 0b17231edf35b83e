"""The policy version every sampled turn was drawn under, and the pause a weight push needs.

Why: with bounded staleness (``trainer.max_staleness = k >= 1``) rollouts for later steps run
while the trainers learn, and the server's weights change under them at every push. The learner
must know which weights sampled each token: the decoupled loss weighs each token by how far the
policy has moved since (``paravt.rollout.staleness``).

``PolicyGate`` is the one place that knows. A sampling request holds a *turn* for as long as it
runs, and the turn records the version at its start. A push *pauses* the gate, which stops new
turns from starting while the weights move, then *resumes* at the new version. It does not wait
for the running turns (it did, and that drained the pipeline at every push: the learner and the
server idled for up to one longest turn, and with several ranks a keep-mode pause froze the
requests another rank was waiting for). A running turn goes on across the push, its later
tokens sampled by the new weights, as TRL's keep-mode pause, AReaL's interruptible generation and
verl's resubmission all keep requests going across an update; continued rather than resubmitted,
since a resubmission redoes the turn's prefill and throws its tokens away.

The accounting stays exact: a turn is tagged with the version it *started* under, the oldest
weights any of its tokens can come from, so an episode's staleness (the learner's version minus
its oldest turn's) is the age of its oldest token and the bound k holds token by token; the
sampler's per-token log-probs are those of the weights that drew each token, which is what the
decoupled loss's behaviour weight needs. ``crossed`` counts the turns that ran across a push
(``async/turns_across_push``).
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
        #: turns that were running when a push paused the gate (module doc)
        self.crossed = 0

    @property
    def version(self) -> int:
        with self._cond:
            return self._version

    @contextmanager
    def turn(self) -> Iterator[int]:
        """Hold one sampling request: waits while a push is under way, then yields the version
        the request starts under (a push may come before it ends: module doc)."""
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

    def pause(self, timeout_s: float | None = None) -> int:
        """Stop new turns while a push moves the weights; the running ones go on (module doc).
        Returns how many were running: they cross the push (``crossed`` adds them up).
        ``timeout_s`` is no longer used (a push used to wait that long for them)."""
        del timeout_s
        with self._cond:
            self._paused = True
            self.crossed += self._active
            return self._active

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
