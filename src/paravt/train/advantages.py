"""GRPO's group advantage over one step's episode rewards, and the reference's options for it:
pure functions of the rewards, the log-probs and the loss mask.

Why its own module: the trainer's rollout gathers every rank's rewards and hands them here, and the
rules that matter for correctness — a failed episode (NaN reward) neither counts in its group's
mean and spread nor gets an advantage, a group of one has no spread, each of TRL's
``scale_rewards`` modes — can then be tested with a few numbers instead of a training run.

The reference (AReaL, docs/PROTOCOL.md §7.2) turns a reward into an advantage differently, and
each of its steps is an option of ``RewardConfig`` (off by default):

1. :func:`mapped_rewards` — R' = clip((R + bias) × scale, ±clip) before the group advantage
   (``reward_bias`` −0.2, ``reward_scale`` 10, ``reward_clip`` 20);
2. :func:`kl_to_go` — the KL to the reference model as a per-token reward, summed from each token
   to the end (``kl_in_reward`` 0.01, in place of TRL's loss term β);
3. :func:`batch_normalised` — the advantage then centred and scaled over every generated token of
   the batch (``advantage_norm: group_then_batch``).

:func:`shaped_advantages` applies 2 and 3 as the trainer does, after the token-level anchor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from trl.trainer.utils import nanstd

from paravt.rewards.config import RewardConfig

__all__ = [
    "batch_normalised",
    "group_advantages",
    "kl_to_go",
    "mapped_rewards",
    "shaped_advantages",
    "shaping_problem",
]

#: TRL's ``scale_rewards`` values (``GRPOConfig`` maps True/False to group/none).
SCALE_MODES = ("group", "batch", "none")
#: Added to the spread before dividing, as TRL does, so a flat group gives 0, not NaN.
STD_EPS = 1e-4
#: Added to the batch's spread in :func:`batch_normalised` (AReaL's NormConfig eps).
BATCH_EPS = 1e-5


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


def mapped_rewards(
    rewards: torch.Tensor, bias: float = 0.0, scale: float = 1.0, clip: float | None = None
) -> torch.Tensor:
    """The reference's map of the episode rewards before their group advantage: ``(R + bias) ×
    scale``, clipped to ``±clip`` (AReaL's ``reward_bias``, ``reward_scaling``, ``reward_clip``).
    A failed episode's NaN stays NaN. The identity with the defaults."""
    out = (rewards + bias) * scale
    return out.clamp(-clip, clip) if clip is not None else out


def kl_to_go(
    behaviour: torch.Tensor, reference: torch.Tensor, mask: torch.Tensor, coef: float
) -> torch.Tensor:
    """``(B, T)``: at each generated token (``mask``), minus ``coef`` times the log-ratio
    ``behaviour − reference`` summed over that token and every later generated token of its row.

    The reference puts ``−kl_ctl · (log π_behaviour − log π_ref)`` (AReaL's k1 estimator) on every
    generated token as a reward and turns rewards into advantages by GAE with γ = λ = 1 and no
    critic, which is exactly this sum to the end; the sequence reward sits at the last token, so
    it reaches every token whole (the group advantage it is added to). Tokens outside ``mask``
    (tool turns, padding) neither carry a KL reward nor receive one."""
    m = mask.to(behaviour.dtype)
    per_token = torch.nan_to_num((behaviour - reference) * m, nan=0.0)
    return -coef * per_token.flip(-1).cumsum(-1).flip(-1) * m


def batch_normalised(
    advantages: torch.Tensor,
    mask: torch.Tensor,
    total: Callable[[torch.Tensor], torch.Tensor] = lambda t: t,
) -> torch.Tensor:
    """``(B, T)``: the advantages (one per row, ``(B,)``, or one per token, ``(B, T)``) centred
    on their mean over every generated token of the batch and divided by their Bessel-corrected
    spread + ``BATCH_EPS``; 0 outside ``mask``. ``total`` sums a tensor over the ranks (the
    trainer's gather), so the mean and spread are the whole step's, as the reference's all-reduce
    makes them (AReaL's ``adv_norm``: mean_level batch, std_level batch). Sums are taken in
    float64. With one token or none there is no spread: the advantages are only masked."""
    a = advantages.unsqueeze(1).expand(mask.shape) if advantages.dim() == 1 else advantages
    m = mask.to(torch.float64)
    x = a.to(torch.float64) * m
    sums = total(torch.stack([x.sum(), (x * x).sum(), m.sum()]))
    n = sums[2]
    if n <= 1:
        return (a * mask).to(advantages.dtype)
    mean = sums[0] / n
    var = torch.clamp((sums[1] - n * mean * mean) / (n - 1), min=0.0)
    out = (a.to(torch.float64) - mean) / (var.sqrt() + BATCH_EPS) * m
    return out.to(advantages.dtype)


def shaped_advantages(
    advantages: torch.Tensor,
    mask: torch.Tensor,
    cfg: RewardConfig,
    behaviour: torch.Tensor | None = None,
    reference: torch.Tensor | None = None,
    total: Callable[[torch.Tensor], torch.Tensor] = lambda t: t,
) -> torch.Tensor:
    """The advantages the loss gets, after the reference's per-token steps that ``cfg`` turns on:
    the KL reward to go (``kl_in_reward``, from the behaviour and reference log-probs) added,
    then the batch normalisation (``advantage_norm: group_then_batch``). Unchanged when both are
    off (the default)."""
    if cfg.kl_in_reward > 0:
        if behaviour is None or reference is None:
            raise ValueError("kl_in_reward needs the behaviour and the reference log-probs")
        rows = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
        advantages = rows + kl_to_go(behaviour, reference, mask, cfg.kl_in_reward)
    if cfg.advantage_norm == "group_then_batch":
        advantages = batch_normalised(advantages, mask, total)
    return advantages


def shaping_problem(args: Any) -> str | None:
    """Why the reward-to-advantage options cannot run with this training config (one line), or
    None: the KL as a reward and TRL's β term together would count it twice."""
    rewards = args.rewards
    if rewards.kl_in_reward > 0 and float(args.beta) != 0.0:
        return (
            f"rewards.kl_in_reward={rewards.kl_in_reward:g} puts the KL in the reward, and "
            f"trainer.beta={float(args.beta):g} puts it in the loss too: set trainer.beta=0 to "
            "keep the reference's form, or rewards.kl_in_reward=0 to keep TRL's"
        )
    return None
