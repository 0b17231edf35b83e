"""An episode record as a training row (``LossRow``): the one place where a record becomes ids,
mask and images.

Both trainers read the engine's token-in/token-out record the same way: ``paravt train``
(PARA-GRPO, ``ParaGRPOTrainer``) weighs the generated tokens with an advantage, ``paravt sft``
(``paravt.train.sft``) imitates them. Keeping the cut in one function means the two cannot drift:
the prompt is everything before the first generated token (think prefix included), the
completion is the rest (generated ids and tool-turn ids), and the mask is the engine's loss mask
over the completion — 1 exactly on generated ids.

The image-pad count of the stream is checked against the record's vision grids here: a mismatch
would silently shift every frame against its tokens in the loss forward.

``LossRow`` is what crosses from the rollout into the learner, one per episode (or sub-agent
trajectory, or no-loss filler): typed, so the trainer's steps (collation, the token-level anchor,
the logs) read named fields instead of a dict whose keys each step has to know.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from paravt.errors import ParavtError
from paravt.schema.episodes import EpisodeRecord

__all__ = ["FeatureMismatchError", "LossRow", "mm_token_type_ids", "record_row"]


class FeatureMismatchError(ParavtError):
    """A row's image-pad tokens do not match its vision features (would corrupt the loss)."""


def image_pad_count(ids: list[int] | torch.Tensor, image_pad_id: int) -> int:
    """How many image-pad tokens ``ids`` holds."""
    return int((torch.as_tensor(ids) == image_pad_id).sum())


def mm_token_type_ids(input_ids: torch.Tensor, image_pad_id: int) -> torch.Tensor:
    """1 at image-pad positions, 0 elsewhere: what Qwen-VL's M-RoPE reads to place the frames."""
    return (input_ids == image_pad_id).long()


@dataclass
class LossRow:
    """One row of the learner's batch.

    The stream (``record_row``): ``prompt`` (ids before the first generated token), ``completion``
    (the rest: generated and tool-turn ids), ``mask`` (1 exactly on generated ids), ``logps``
    (the sampler's log-prob of each completion token; 0.0 where none was recorded), the row's
    images (``pixel_values``: one tensor, or the record's row pieces; ``grid``: ``(n, 3)``
    ``image_grid_thw``, None without images) and ``ok`` (False: a row that carries no loss, for a
    failed episode or a filler).

    What the learner adds: ``advantage`` (the episode's group advantage; a sub-agent row carries
    its episode's), ``flat`` (its group's rewards do not vary: no token-level anchor), and, per
    turn, where its generated ids sit in the completion (``turns``), whether it leaves
    ``<think>`` open (``open_think``) and whether it closed a substantive think (``think_closed``)
    for the token-level anchor; ``truncated`` (the last turn hit the token limit: TRL's
    ``mask_truncated_completions`` keeps it out of the loss).
    """

    prompt: list[int]
    completion: list[int]
    mask: list[int]
    logps: list[float]
    pixel_values: Any = None
    grid: torch.Tensor | None = None
    ok: bool = True
    advantage: float = 0.0
    flat: bool = False
    truncated: bool = False
    turns: list[tuple[int, int]] | None = None
    open_think: list[bool] | tuple = ()
    think_closed: list[bool] | None = None


def record_row(
    record: EpisodeRecord, image_pad_id: int, merge: int, join_pixels: bool = True
) -> LossRow | None:
    """The ``LossRow`` of one record (its stream; the learner's fields at their defaults), or
    None when the record has nothing to learn from (an errored episode, no generated token).

    ``merge`` is the processor's ``merge_size ** 2`` (image-pad tokens per vision feature row).
    ``join_pixels=False`` leaves ``pixel_values`` as the record's row pieces (a list,
    ``TokenStream.pixel_parts``) for a caller that joins a whole batch at once.
    Raises ``FeatureMismatchError`` when the stream's image pads and the grids disagree.
    """
    stream = record.stream
    ok = record.status == "ok" and len(stream.token_ids) > stream.prompt_len > 0
    if not ok:
        return None
    p = stream.prompt_len
    mask = [int(m) for m in stream.loss_mask[p:]]
    logps = list(stream.logprobs[p:]) if stream.logprobs else [0.0] * len(mask)
    grid = stream.image_grid_thw
    pv = stream.pixel_values if join_pixels else stream.pixel_parts()
    if grid is not None:
        grid = torch.as_tensor(grid).reshape(-1, 3).long()
        features = int(grid.prod(-1).sum()) // merge
        tokens = image_pad_count(stream.token_ids, image_pad_id)
        if tokens != features:
            raise FeatureMismatchError(
                f"episode {record.id}: {tokens} image-pad tokens but {features} vision features "
                f"({len(grid)} images); the loss forward would misalign frames and tokens"
            )
        if len(grid) == 0:
            grid, pv = None, None
    elif image_pad_count(stream.token_ids, image_pad_id):
        raise FeatureMismatchError(f"episode {record.id}: image-pad tokens but no image features")
    return LossRow(
        prompt=list(stream.token_ids[:p]),
        completion=list(stream.token_ids[p:]),
        mask=mask,
        logps=logps,
        pixel_values=pv,
        grid=grid,
    )
