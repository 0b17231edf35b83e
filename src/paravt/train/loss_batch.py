"""``LossBatch``: a step's ``LossRow``s as padded tensors, what the learner's passes read.

``ParaGRPOTrainer._collate`` builds it from the rows (prompts left-padded, completions
right-padded, the loss mask, every row's images in stream order); the old/ref log-prob passes, the
token-level anchor and the step's metrics read its fields by name. Only at the end does it become
TRL's own input dict (``trl_inputs``), the one ``GRPOTrainer._compute_loss`` reads, with the keys
TRL's rollout would have given it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

__all__ = ["LossBatch"]


@dataclass
class LossBatch:
    """The padded batch of one step's loss rows (``B`` rows; ``P`` prompt and ``T`` completion
    positions): ids and masks ``(B, P)`` / ``(B, T)``; ``tool_mask`` is 1 on generated ids
    (0 on tool turns, padding and rows left out of the loss); ``loss_mask`` = completion mask ∧
    tool mask; ``sampling_logps`` ``(B, T)`` the sampler's log-probs; ``num_items_in_batch`` the
    loss tokens of all ranks; ``prompt_completion_ids`` / ``attention_mask`` the two joined, and
    ``logits_to_keep`` = ``T``. Images: ``num_images`` per row, and, when any row has one, the
    joined ``pixel_values``, ``image_grid_thw`` and the M-RoPE ``mm_token_type_ids``."""

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor
    tool_mask: torch.Tensor
    sampling_logps: torch.Tensor
    loss_mask: torch.Tensor
    num_items_in_batch: torch.Tensor
    prompt_completion_ids: torch.Tensor
    attention_mask: torch.Tensor
    logits_to_keep: int
    num_images: list[int]
    pixel_values: torch.Tensor | None = None
    image_grid_thw: torch.Tensor | None = None
    mm_token_type_ids: torch.Tensor | None = None

    @property
    def forward_kwargs(self) -> dict[str, torch.Tensor | None]:
        """The image inputs of a forward over the batch, as TRL's forward takes them; empty when
        no row has an image."""
        if self.pixel_values is None:
            return {}
        return {
            "pixel_values": self.pixel_values,
            "image_grid_thw": self.image_grid_thw,
            "mm_token_type_ids": self.mm_token_type_ids,
        }

    def trl_inputs(
        self,
        advantages: torch.Tensor,
        *,
        sampling_logps: torch.Tensor | None,
        old_logps: torch.Tensor | None,
        ref_logps: torch.Tensor | None,
        importance_sampling_ratio: torch.Tensor | None,
    ) -> dict:
        """TRL's input dict for ``_compute_loss``: the keys its rollout would give, each present
        only when there is a value (``sampling_logps`` only when the sampler's log-probs are
        real)."""
        out: dict[str, Any] = {
            "prompt_ids": self.prompt_ids,
            "prompt_mask": self.prompt_mask,
            "completion_ids": self.completion_ids,
            "completion_mask": self.completion_mask,
            "tool_mask": self.tool_mask,
            "advantages": advantages,
            "num_items_in_batch": self.num_items_in_batch,
        }
        optional = {
            "sampling_per_token_logps": sampling_logps,
            "old_per_token_logps": old_logps,
            "importance_sampling_ratio": importance_sampling_ratio,
            "ref_per_token_logps": ref_logps,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        if self.forward_kwargs:
            out.update(self.forward_kwargs)
            out["num_images"] = self.num_images
        return out
