"""Ranks in lockstep when every forward pass is a collective.

Under FSDP (and DeepSpeed ZeRO-3) each wrapped module all-gathers its parameter shards when it
runs, so every rank must run the same modules the same number of times, in the same order. The
rollout breaks that: episodes on different ranks need different numbers of rounds, budgets
(``max_new_tokens`` groups) and sub-agent calls, and one rank's batch may hold images while
another's has none (the vision tower then runs on one rank only). The loss side breaks it too:
with ``subagent_in_loss`` a rank holds one extra row per sub-agent trajectory, so ranks run
different numbers of log-prob chunks.

The fixes, the same as the vLLM backend's (``paravt.train.vllm_backend``):

- sampling: before each generate call every rank shares ``{group: (requests, has images)}`` and
  whether its episodes still run (``Lockstep.tick``); each group any rank has is sampled on every
  rank, in the same order and the same number of batches, a rank short of requests samples a
  filler prompt (its output dropped), a filler image joins a batch without images when another
  rank's has some, and a rank whose episodes are done keeps joining until no rank runs (``drain``);
- loss: every rank holds the same number of rows (``pad_rows``: no-loss rows, loss weight 0), and
  under lockstep a no-loss row carries the filler image, so each log-prob chunk runs the vision
  tower on every rank.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

Key = tuple[int, float, float]
#: what a rank says of one sampling group: (requests, whether any carries an image)
Share = tuple[int, bool]


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
        for their_groups, their_running in self._gather([(groups, running)]):
            any_running = any_running or bool(their_running)
            for key, (n, images) in their_groups.items():
                had_n, had_images = merged.get(key, (0, False))
                merged[key] = (max(had_n, int(n)), had_images or bool(images))
        return merged, any_running


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
