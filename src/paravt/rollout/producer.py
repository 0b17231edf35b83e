"""Rollouts for later steps, run while the trainers learn (``trainer.max_staleness = k >= 1``).

Why: in the synchronous loop a step pushes the weights, rolls out, then learns, and the
inference server idles while the trainers learn and the trainers idle while it samples. The
paper's run (AReaL, ``max_head_offpolicyness: 2``) overlaps the two. Here a thread of the
trainer's process, the producer, runs the episodes of step ``s`` as soon as the policy is at
version ``s - k`` or later, so while the learner works on step ``s`` the rollouts of steps up to
``s + k`` are under way on the server.

What keeps it honest:

- rollouts started in step order, each as soon as the version allows and without waiting for
  the step before to finish (so the next step's episodes start while the current step's last
  ones run), handed out in step order, each the same episodes the synchronous loop would run
  for that step (the trainer hands the producer its own copy of the step batches and checks the
  prompts it consumes against the ones TRL gives the step);
- every sampling request holds a turn of the ``PolicyGate`` and records the version it started
  under; a push pauses the gate for new turns only, and the running ones go on across it (their
  later tokens from the new weights; ``paravt.rollout.gate`` says why the accounting stays
  exact); an episode running across a push continues under the new weights: a partial rollout,
  its turns carrying their versions;
- a failure in the producer (a server gone, a push the server did not take) is raised in the
  learner's thread when it asks for that step, with its own type and message.

The producer neither pushes weights nor scores: the learner pushes at the start of each step
(``VLLMBackend.sync_to``) and does everything after the rollout as in the synchronous loop.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from paravt.rollout.gate import GateClosedError, PolicyGate
from paravt.schema.episodes import EpisodeInput, EpisodeRecord

__all__ = ["ProducedStep", "RolloutProducer", "step_batches"]

logger = logging.getLogger(__name__)

#: ``run(rows, epoch) -> (episode inputs, records)``: one step's episodes through the engine
RunStep = Callable[[list[dict], int], tuple[list[EpisodeInput], list[EpisodeRecord]]]


@dataclass
class ProducedStep:
    """The rollout of one step: its rows (as TRL's batch gave them), the epoch its K were gated
    for, the episodes, the version the rollout started at, and how long it ran."""

    index: int
    epoch: int
    rows: list[dict]
    inputs: list[EpisodeInput]
    records: list[EpisodeRecord]
    started_at_version: int
    seconds: float


class RolloutProducer:
    """Runs the rollouts of steps ``start, start + 1, ...`` in a thread, each once the gate's
    version is at least ``step - lead`` (``lead`` = ``max_staleness``), and hands them out in
    order (``take``)."""

    def __init__(
        self,
        batches: Iterator[tuple[int, list[dict]]],
        run: RunStep,
        gate: PolicyGate,
        *,
        lead: int,
        start: int,
    ):
        if lead < 1:
            raise ValueError(f"a producer runs ahead by at least one step, not {lead}")
        self._batches, self._run, self.gate = batches, run, gate
        self.lead, self.next_index = int(lead), int(start)
        self._done: dict[int, ProducedStep] = {}
        #: the steps whose rollouts are under way, and their threads
        self._running: dict[int, threading.Thread] = {}
        self._exhausted = False  # no step will start any more (batches out, closed, failed)
        self._error: BaseException | None = None
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="paravt-rollout", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        """Start each step's rollout on a thread of its own as soon as the version allows it,
        without waiting for the step before to finish: the next step's episodes start while the
        current step's last ones still run (they waited for the slowest episode of the step, and
        the server ran below its batch meanwhile). At most ``lead + 1`` steps run at once (the
        version bound), and steps are handed out in order (``take``)."""
        index = self.next_index
        while not self._stop.is_set():
            if not self.gate.wait_for_version(index - self.lead):
                break
            try:
                epoch, rows = next(self._batches)
            except StopIteration:
                break
            except BaseException as e:  # noqa: BLE001 - handed to the learner, raised there
                self._fail(e, index)
                break
            worker = threading.Thread(
                target=self._run_step, args=(index, epoch, rows), name=f"paravt-rollout-{index}",
                daemon=True,
            )  # fmt: skip
            with self._cond:
                self._running[index] = worker
            worker.start()
            index += 1
        with self._cond:
            self._exhausted = True
            self._cond.notify_all()

    def _run_step(self, index: int, epoch: int, rows: list[dict]) -> None:
        try:
            version, t0 = self.gate.version, time.perf_counter()
            inputs, records = self._run(rows, epoch)
            produced = ProducedStep(
                index, epoch, rows, inputs, records, version, time.perf_counter() - t0
            )
        except GateClosedError:
            produced = None
        except BaseException as e:  # noqa: BLE001 - handed to the learner, raised there
            self._fail(e, index)
            produced = None
        with self._cond:
            self._running.pop(index, None)
            if produced is not None:
                self._done[index] = produced
            self._cond.notify_all()

    def _fail(self, error: BaseException, index: int) -> None:
        logger.debug("the rollout of step %d failed", index, exc_info=True)
        with self._cond:
            if self._error is None:
                self._error = error
            self._cond.notify_all()

    def take(self, index: int, timeout_s: float | None = None) -> ProducedStep:
        """The rollout of step ``index`` (steps are taken in order), waiting for it; the
        producer's failure, if it failed first, is raised here."""
        with self._cond:
            ready = self._cond.wait_for(
                lambda: index in self._done or self._error is not None or not self._alive(),
                timeout=timeout_s,
            )
            if index in self._done:
                self.next_index = index + 1
                return self._done.pop(index)
            if self._error is not None:
                raise self._error
        if not ready:
            raise TimeoutError(f"the rollout of step {index} did not finish in {timeout_s} s")
        raise RuntimeError(f"the rollout producer stopped before step {index} (no more batches)")

    def _alive(self) -> bool:
        """A rollout may still come: a step is under way or more may start."""
        return bool(self._running) or not self._exhausted

    def ahead(self) -> int:
        """Rollouts finished and not yet taken (for the step log)."""
        with self._cond:
            return len(self._done)

    def close(self, timeout_s: float = 60.0) -> None:
        """Stop after the rollouts under way (their requests finish; nothing new starts)."""
        self._stop.set()
        self.gate.close()
        if self._thread.ident:
            self._thread.join(timeout_s)
        with self._cond:
            workers = list(self._running.values())
        for worker in workers:
            worker.join(timeout_s)


def step_batches(dataloader: Any, every: int, start: int) -> Iterator[tuple[int, list[dict]]]:
    """``(epoch, rows)`` of each step from ``start`` on, from a copy of the trainer's dataloader:
    TRL's repeat sampler gives the same generation batch ``every`` times in a row (once per
    micro-step of a generation), so every ``every``-th item is a step's batch; a pass over the
    dataloader is an epoch, and the next pass continues the sampler's shuffle, as the trainer's
    own loop does."""
    position, epoch = 0, 0
    while True:
        if hasattr(dataloader, "set_epoch"):
            dataloader.set_epoch(epoch)
        emitted = False
        for item in dataloader:
            emitted = True
            step, offset = divmod(position, every)
            position += 1
            if offset == 0 and step >= start:
                yield epoch, item
        if not emitted:
            return
        epoch += 1
