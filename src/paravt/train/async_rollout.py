"""The learner's side of bounded staleness: push, take the step's rollout, check its age.

``ParaGRPOTrainer`` with ``trainer.max_staleness = k >= 1`` (server mode) calls ``step`` where
the synchronous loop runs its rollout. At step ``s`` (``s`` optimizer steps taken):

1. the weights of version ``s`` go to the server (``VLLMBackend.sync_to``: the gate pauses the
   producer's requests, the push runs, requests resume under ``s``);
2. the producer is started on the first call, from step ``s`` on (a resumed run starts at the
   step it resumes at), on its own copy of the step batches;
3. the rollout of step ``s`` is taken (it was started once the policy reached ``s - k``), and
   its prompts are checked against the ones TRL gives the step: the same sampler, the same
   order, or the run stops with what differs;
4. each episode's staleness is ``s`` minus the oldest version among its turns
   (``paravt.rollout.staleness``); groups older than ``k`` or of unknown age are dropped on
   every rank and their episodes sampled again now, under version ``s``.

Everything after the rollout (rewards, advantages, old and reference log-probs, the loss) is
the synchronous loop's. The loss is the decoupled PPO objective: TRL's clipped ratio is taken
against the old log-probs computed at this step (the proximal policy), and TRL's importance
weight ``exp(old - sampler)``, per token and truncated (``vllm_importance_sampling_*``),
corrects for the behaviour policy that sampled each token, whichever version it was.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from paravt.errors import ParavtError
from paravt.rollout.gate import PolicyGate
from paravt.rollout.lockstep import exchange
from paravt.rollout.producer import ProducedStep, RolloutProducer, step_batches
from paravt.rollout.producer_process import ChildGate, RolloutChild
from paravt.rollout.staleness import StalenessLog, episode_staleness, groups_to_drop
from paravt.schema.episodes import EpisodeInput, EpisodeRecord

__all__: list[str] = []  # nothing here is for the other rooms

logger = logging.getLogger(__name__)


class RolloutMismatchError(ParavtError):
    """The producer's batch for a step is not the one TRL gives the step (a sampler or data
    loader that is not deterministic): learning from it would skip and repeat prompts."""


@dataclass
class AsyncStep:
    """The rollout a step learns from: its episodes, each episode's policy version (the oldest
    of its turns), the epoch its K were gated for, and the staleness record."""

    epoch: int
    inputs: list[EpisodeInput]
    records: list[EpisodeRecord]
    versions: list[int]
    log: StalenessLog


class AsyncRollouts:
    """One trainer's producer, gate and staleness checks (module doc).

    ``run(rows, epoch)`` runs one step's episodes through the engine without pushing;
    ``prompt_ids(rows)`` names a batch's prompts; ``gather`` is the ranks' all-gather of one
    object each; ``dataloader`` a fresh copy of the trainer's training dataloader."""

    def __init__(
        self,
        backend: Any,
        *,
        max_staleness: int,
        group_size: int,
        every: int,
        run: Callable[[list[dict], int], tuple[list[EpisodeInput], list[EpisodeRecord]]],
        rerun: Callable[[list[EpisodeInput]], list[EpisodeRecord]],
        dataloader: Callable[[], Any],
        gather: Callable[[list], list],
        rank: int,
        pause_s: float,
        spawn: Callable[[int], RolloutChild] | None = None,
        episode_inputs: Callable[[list[dict], int], list[EpisodeInput]] | None = None,
    ):
        self.backend, self.k = backend, int(max_staleness)
        self.group_size, self.every = int(group_size), int(every)
        self._run, self._rerun, self._dataloader = run, rerun, dataloader
        self._gather, self.rank, self.pause_s = gather, int(rank), float(pause_s)
        #: ``trainer.producer: process``: ``spawn(version)`` starts the rollout process, and the
        #: step's inputs are made here (``episode_inputs(rows, epoch)``) and run there
        self._spawn, self._episode_inputs = spawn, episode_inputs
        self.child: RolloutChild | None = None
        self.producer: RolloutProducer | None = None
        #: the producer's lead over the learner; the staleness bound ``k`` unless a test widens it
        self.lead = self.k

    def step(self, rows: list[dict], step: int) -> AsyncStep:
        """The rollout step ``step`` learns from (module doc, 1 to 4)."""
        log = StalenessLog()
        t0 = time.perf_counter()
        if self.backend.gate is None:
            self.backend.gate = self._gate(step)
        crossed = self.backend.gate.crossed
        self.backend.sync_to(step, self.pause_s)
        log.push_s = time.perf_counter() - t0
        log.turns_across_push = self.backend.gate.crossed - crossed
        if self.producer is None:
            self._start(step)
        assert self.producer is not None
        t0 = time.perf_counter()
        produced = self.producer.take(step)
        log.wait_s = time.perf_counter() - t0
        self._check_prompts(produced, rows, step)
        records = self._fresh(produced, step, log)
        versions = [min((v for v in _versions(r) if v is not None), default=step) for r in records]
        return AsyncStep(produced.epoch, produced.inputs, records, versions, log)

    def _gate(self, step: int) -> PolicyGate:
        """The gate, and with ``producer: process`` the rollout process behind it."""
        if self._spawn is None:
            return PolicyGate(step)
        self.child = self._spawn(step)
        logger.info("the producer samples in process %d", self.child.pid)
        return ChildGate(step, self.child)

    def _run_in_child(
        self, rows: list[dict], epoch: int
    ) -> tuple[list[EpisodeInput], list[EpisodeRecord]]:
        assert self.child is not None and self._episode_inputs is not None
        inputs = self._episode_inputs(rows, epoch)
        return inputs, self.child.run(inputs)

    def _start(self, step: int) -> None:
        batches = step_batches(self._dataloader(), self.every, step)
        run = self._run if self.child is None else self._run_in_child
        self.producer = RolloutProducer(batches, run, self.backend.gate, lead=self.lead, start=step)
        self.producer.start()
        logger.info(
            "rollouts run up to %d steps ahead of the learner (max_staleness=%d)",
            self.lead,
            self.k,
        )

    def _check_prompts(self, produced: ProducedStep, rows: list[dict], step: int) -> None:
        want = [str(r.get("prompt_id")) for r in rows]
        got = [str(r.get("prompt_id")) for r in produced.rows]
        if want != got:
            raise RolloutMismatchError(
                f"step {step}: the rollout ran prompts {got[:4]}... where TRL's batch holds "
                f"{want[:4]}...: the training sampler is not deterministic across two copies of "
                "the data loader (an iterable dataset with its own shuffle?); use "
                "max_staleness=0 with it"
            )

    def _fresh(self, produced: ProducedStep, step: int, log: StalenessLog) -> list[EpisodeRecord]:
        """The step's records with every group too old (or of unknown age) sampled again; the
        drop decision is made on the gathered batch (every rank holds as many episodes, in
        batch order), so every rank drops the same groups."""
        local = [episode_staleness(r, step) for r in produced.records]
        # a handshake: a rank whose producer failed joins it with its failure (the trainer's
        # announce), and this rank stops here naming it (it read a failure as a share and died
        # of a TypeError, then announced that into a gather no rank joined: both ranks hung)
        everyone = [s for part in exchange(self._gather, local) for s in part]
        drop = groups_to_drop(everyone, self.group_size, self.k)
        start = self.rank * len(local)
        again = [i for i, d in enumerate(drop[start : start + len(local)]) if d]
        records = list(produced.records)
        if again:
            fresh = self._rerun([produced.inputs[i] for i in again])
            for i, rec in zip(again, fresh, strict=True):
                records[i] = rec
            logger.info(
                "step %d: %d episodes of groups older than %d versions (or of unknown age) "
                "sampled again under the current weights",
                step,
                len(again),
                self.k,
            )
        log.groups_dropped = sum(drop) // max(1, self.group_size)
        log.episodes_regenerated = sum(drop)
        # what the step learns from: a regenerated episode was sampled under version ``step``
        log.staleness = [0 if d or s is None else s for s, d in zip(everyone, drop, strict=True)]
        return records

    def close(self) -> None:
        if self.producer is not None:
            self.producer.close()
            self.producer = None
        if self.child is not None:
            self.child.close()


def _versions(record: EpisodeRecord) -> list[int | None]:
    return [t.policy_version for t in record.turns]
