"""Ranks in lockstep when every forward pass is a collective.

Under FSDP (and DeepSpeed ZeRO-3) each wrapped module all-gathers its parameter shards when it
runs, so every rank must run the same modules the same number of times, in the same order. The
rollout breaks that: episodes on different ranks need different numbers of rounds, budgets
(``max_new_tokens`` groups) and sub-agent calls, and one rank's batch may hold images while
another's has none (the vision tower then runs on one rank only). The loss side breaks it too:
with ``subagent_in_loss`` a rank holds one extra row per sub-agent trajectory, so ranks run
different numbers of log-prob chunks.

The fixes, the same as the vLLM backend's (``paravt.rollout.vllm``):

- sampling: before each generate call every rank shares ``{group: (requests, has images)}`` and
  whether its episodes still run (``Lockstep.tick``); each group any rank has is sampled on every
  rank, in the same order and the same number of batches, a rank short of requests samples a
  filler prompt (its output dropped), a filler image joins a batch without images when another
  rank's has some, and a rank whose episodes are done keeps joining until no rank runs (``drain``);
- loss: every rank holds the same number of rows (``pad_rows``: no-loss rows, loss weight 0), and
  under lockstep a no-loss row carries the filler image, so each log-prob chunk runs the vision
  tower on every rank.

A rank whose rollout raises (the engine, a tool, its backend) between two handshakes would leave
the others waiting in their next one until the process group times out (``trainer.ddp_timeout``,
30 minutes by default): nothing else tells them. So it joins that handshake once more with its
failure in place of its share (``announce_failure``), and every rank that reads a failure there
raises ``RankFailedError`` naming the rank and its error (``exchange``); the failed rank re-raises
its own. Both sampling lockstep backends (the policy's, vLLM's) share through ``exchange``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from paravt.errors import RankFailedError

__all__ = ["Lockstep", "announce_failure", "exchange", "filler_image"]

logger = logging.getLogger(__name__)

Key = tuple[int, float, float]
#: what a rank says of one sampling group: (requests, whether any carries an image)
Share = tuple[int, bool]
#: the longest error message a failed rank sends the others (the rest is in its own log)
FAILURE_MESSAGE_CHARS = 2000


@dataclass(frozen=True)
class RankFailure:
    """What a failed rank sends in place of its share: its error's type and message."""

    kind: str
    message: str


def exchange(gather: Callable[[list], list], share: Any) -> list:
    """Every rank's share of one handshake, in rank order; ``RankFailedError`` naming the first
    failed rank when any rank joined it with a ``RankFailure``."""
    shares = gather([share])
    for rank, theirs in enumerate(shares):
        if isinstance(theirs, RankFailure):
            raise RankFailedError(rank, theirs.kind, theirs.message)
    return shares


def announce_failure(gather: Callable[[list], list], error: BaseException) -> None:
    """Join the other ranks' next handshake with ``error`` in place of a share, so they stop now;
    the caller re-raises ``error``. A ``RankFailedError`` is not announced: it came from a
    handshake every rank has already seen."""
    if isinstance(error, RankFailedError):
        return
    failure = RankFailure(type(error).__name__, str(error)[:FAILURE_MESSAGE_CHARS])
    logger.error("this rank's rollout failed (%s): telling the other ranks", failure.kind)
    try:
        gather([failure])
    except Exception as e:  # noqa: BLE001 - the caller raises the rollout's error, not this one
        logger.error("could not tell the other ranks of this rank's failure: %r", e)


class Lockstep:
    """The per-call handshake: ``gather`` is an all-gather of one picklable object per rank
    (``accelerate.utils.gather_object``)."""

    def __init__(self, gather: Callable[[list], list]):
        self._gather = gather
        self.ticks = 0  # handshakes, for tests

    def tick(self, groups: dict[Key, Share], running: bool) -> tuple[dict[Key, Share], bool]:
        """Every rank's groups merged (the most requests of any rank, images if any rank has
        them), and whether any rank still runs episodes."""
        self.ticks += 1
        merged: dict[Key, Share] = {}
        any_running = False
        for their_groups, their_running in exchange(self._gather, (groups, running)):
            any_running = any_running or bool(their_running)
            for key, (n, images) in their_groups.items():
                had_n, had_images = merged.get(key, (0, False))
                merged[key] = (max(had_n, int(n)), had_images or bool(images))
        return merged, any_running

    def fail(self, error: BaseException) -> None:
        """This rank's rollout raised ``error``: tell the others at their next handshake."""
        announce_failure(self._gather, error)


def filler_image(codec: Any, tokenizer: Any) -> tuple[list[int], torch.Tensor, torch.Tensor]:
    """``(ids, pixel_values, image_grid_thw)`` of the smallest image the model takes: one merge
    block of black patches (``merge²`` patch rows, one image pad), framed by the vision tokens.

    It only has to make the vision tower run, so its output never reaches a sampled turn or the
    loss."""
    m = int(codec.merge_size)
    dim = 3 * int(codec.temporal_patch_size) * int(codec.patch_size) ** 2
    ids = [
        tokenizer.convert_tokens_to_ids("<|vision_start|>"),
        tokenizer.convert_tokens_to_ids("<|image_pad|>"),
        tokenizer.convert_tokens_to_ids("<|vision_end|>"),
    ]
    return ids, torch.zeros(m * m, dim), torch.tensor([[1, m, m]])
