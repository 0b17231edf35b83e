"""GRPO's group advantage over one step's episode rewards: a pure function of the rewards.

Why its own module: the trainer's rollout gathers every rank's rewards and hands them here, and the
rules that matter for correctness — a failed episode (NaN reward) neither counts in its group's
mean and spread nor gets an advantage, a group of one has no spread, each of TRL's
``scale_rewards`` modes — can then be tested with a few numbers instead of a training run.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from trl.trainer.utils import nanstd

__all__ = ["group_advantages"]

#: TRL's ``scale_rewards`` values (``GRPOConfig`` maps True/False to group/none).
SCALE_MODES = ("group", "batch", "none")
#: Added to the spread before dividing, as TRL does, so a flat group gives 0, not NaN.
STD_EPS = 1e-4


@dataclass
class GroupAdvantages:
    """``advantages``: one per episode (0 for a failed one); ``zero_var``: per episode, whether its
    group's rewards have no spread (GRPO learns nothing there, and the token anchor adds nothing);
    ``zero_var_share``: the share of groups with no spread."""

    advantages: torch.Tensor
    zero_var: torch.Tensor
    zero_var_share: float


def group_advantages(rewards: torch.Tensor, group_size: int, scale: str) -> GroupAdvantages:
    """Advantages of ``rewards`` (shape ``(N,)``, consecutive groups of ``group_size``, NaN for an
    episode that failed), centred on the group mean and, unless ``scale`` is ``none``, divided by
    the group's (``group``) or the whole batch's (``batch``) standard deviation plus ``STD_EPS``.
    NaN rewards are left out of every mean and spread."""
    if scale not in SCALE_MODES:
        raise ValueError(f"scale_rewards={scale!r}: use one of {', '.join(SCALE_MODES)}")
    if group_size < 1 or rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not form groups of {group_size}")
    grouped = rewards.view(-1, group_size)
    mean = torch.nanmean(grouped, dim=1).repeat_interleave(group_size)
    if group_size > 1:
        std_group = nanstd(grouped, dim=1).repeat_interleave(group_size)
    else:
        std_group = torch.zeros_like(rewards)
    std = nanstd(rewards).expand_as(rewards) if scale == "batch" else std_group
    advantages = rewards - mean
    if scale != "none":
        advantages = advantages / (std + STD_EPS)
    advantages = torch.nan_to_num(advantages, nan=0.0)
    zero_var = torch.isclose(torch.nan_to_num(std_group, nan=0.0), torch.zeros_like(std_group))
    share = zero_var.view(-1, group_size)[:, 0].float().mean().item()
    return GroupAdvantages(advantages, zero_var, share)
