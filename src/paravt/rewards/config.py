"""``RewardConfig``: every PARA-GRPO reward constant (docs/PROTOCOL.md §5) in one typed place.

Why a dataclass and not module constants: the paper recipe, the vanilla-GRPO baseline and any
ablation differ only in these numbers, and the resolved values must be recorded with every run.
The defaults are the paper's. Training nests the whole of it as ``ParaGRPOConfig.rewards`` (a
recipe's top-level ``rewards`` section, ``--set rewards.KEY=VALUE``), so every field is a knob of a
run and is recorded in its ``config.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from paravt.config import check_choices
from paravt.errors import ConfigError

__all__ = ["REFERENCE_ADVANTAGE", "RewardConfig"]

#: The structural tokens that token-level anchoring looks for, and their default bonus.
DEFAULT_TOKEN_ANCHOR_VALUES: dict[str, float] = {
    "</think>": 0.1,
    "<answer>": 0.05,
    "</answer>": 0.05,
    "</tool_call>": 0.05,
}

#: How the reference turns R into an advantage (its AReaL _base.yaml: reward_bias, reward_scaling,
#: reward_clip, reward_norm group + adv_norm batch, kl_ctl), as ``RewardConfig`` fields: what the
#: reference recipes (paragrpo, vanilla_grpo and their -sync twins) set, with trainer.beta 0.
REFERENCE_ADVANTAGE: dict[str, object] = {
    "reward_bias": -0.2,
    "reward_scale": 10.0,
    "reward_clip": 20.0,
    "advantage_norm": "group_then_batch",
    "kl_in_reward": 0.01,
}


@dataclass
class RewardConfig:
    """R = R_acc + format_weight · R_fmt + R_tool, with R_fmt = clip(base + λ·anchor, 0, 1); and
    how R becomes an advantage (the reference's map, clip, batch normalisation and KL reward)."""

    # weights
    format_weight: float = 1.0  # w_fmt
    anchor_lambda: float = 0.5  # λ_anchor (0 = vanilla GRPO)
    # format base terms
    think_min_chars: int = 10  # a <think> counts as substantive from this many characters ...
    think_min_words: int = 3  # ... holding this many distinct words (0: characters alone)
    think_min_new_words: int = 2  # ... this many of them not in the question
    think_bonus: float = 0.2
    answer_bonus: float = 0.3  # non-empty <answer>
    answer_close_bonus: float = 0.2  # ... and its </answer>
    think_before_call_bonus: float = 0.3  # <think> before the first tool call (when one exists)
    balanced_bonus: float = 0.1  # every tag pair balanced (at least one pair present)
    # anchor terms (multiplied by anchor_lambda)
    anchor_close: float = 0.4  # </think> closes an open <think>
    anchor_flow: float = 0.3  # <think> → </think> → <answer> non-empty </answer>
    anchor_unclosed: float = -0.3  # a <think> opened and never closed
    # tool reward (from execution, not text)
    tool_parseable: float = 0.1  # parse credit: calls read but none executed (0 = none for them)
    tool_executed: float = 0.3  # at least one call executed (a window decoded)
    tool_correct_bonus: float = 0.5
    tool_correct_threshold: float = 0.5  # R_acc at or above this counts as correct
    tool_bonus_requires_call: bool = True  # the +0.5 needs at least one executed call
    # accuracy
    oe_metric: Literal["f1", "exact"] = "f1"
    # token-level anchoring (off in the paper-compatible recipe)
    token_anchor: bool = False
    token_anchor_values: dict = field(default_factory=lambda: dict(DEFAULT_TOKEN_ANCHOR_VALUES))
    # -- how the reward becomes an advantage: the reference's options (docs/PROTOCOL.md §7.2).
    # The defaults are GRPO as TRL computes it, which every toy result was measured under; the
    # reference recipes (paragrpo, vanilla_grpo and their -sync twins) set the reference's values.
    reward_bias: float = field(
        default=0.0,
        metadata={
            "help": "Added to each episode's R before its group advantage: R' = clip((R + "
            "reward_bias) x reward_scale, +-reward_clip). The reference: -0.2 (AReaL "
            "reward_bias). 0 = R as it is."
        },
    )
    reward_scale: float = field(
        default=1.0,
        metadata={
            "help": "Multiplies R + reward_bias (> 0). The reference: 10 (AReaL reward_scaling). "
            "Under the group normalisation alone a positive scale changes nothing but the spread "
            "floor's weight; with reward_clip it sets where the clip bites."
        },
    )
    reward_clip: float | None = field(
        default=None,
        metadata={
            "help": "Clips (R + reward_bias) x reward_scale to +-reward_clip (> 0). The reference: "
            "20 (AReaL reward_clip), which with -0.2 and 10 makes every R >= 2.2 the same 20: "
            "among correct answers the format and tool terms above it stop counting. None: no "
            "clip (the default, so the anchor and tool terms keep their weight)."
        },
    )
    advantage_norm: Literal["group", "group_then_batch"] = field(
        default="group",
        metadata={
            "help": "group: GRPO's advantage, normalised in the group (trainer.scale_rewards). "
            "group_then_batch: that advantage (with the token-level anchor and the KL reward when "
            "on) then centred and scaled over every generated token of the batch, all ranks, as "
            "the reference does (AReaL reward_norm group + adv_norm batch). Default group: a "
            "zero-variance group then keeps advantage 0, which the token anchor relies on; "
            "under group_then_batch it gets minus the batch mean."
        },
    )
    kl_in_reward: float = field(
        default=0.0,
        metadata={
            "help": "The KL to the reference model as a per-token reward, the reference's form "
            "(AReaL kl_ctl, k1 estimator): each generated token's advantage gets minus this times "
            "the log-ratio behaviour - reference summed from that token to the episode's end. An "
            "alternative to TRL's loss term trainer.beta: > 0 needs trainer.beta = 0. The "
            "reference: 0.01. Default 0: the KL stays TRL's beta term, the tested path."
        },
    )

    def __post_init__(self) -> None:
        check_choices(self)  # oe_metric, advantage_norm (Literal)
        if self.think_min_chars < 0:
            raise ConfigError(f"think_min_chars={self.think_min_chars}: must be >= 0")
        if self.think_min_words < 0:
            raise ConfigError(f"think_min_words={self.think_min_words}: must be >= 0")
        if self.think_min_new_words < 0:
            raise ConfigError(f"think_min_new_words={self.think_min_new_words}: must be >= 0")
        if self.reward_scale <= 0:
            raise ConfigError(
                f"reward_scale={self.reward_scale}: must be > 0 (a negative scale would reward the "
                "worse episodes of a group)"
            )
        if self.reward_clip is not None and self.reward_clip <= 0:
            raise ConfigError(f"reward_clip={self.reward_clip}: give a bound > 0, or null for none")
        if self.kl_in_reward < 0:
            raise ConfigError(f"kl_in_reward={self.kl_in_reward}: must be >= 0 (0 = off)")
        bad = [k for k, v in self.token_anchor_values.items() if not isinstance(k, str) or not k]
        if bad:
            raise ConfigError(
                f"token_anchor_values: keys must be non-empty token texts such as '</think>', "
                f"got {bad!r}"
            )

    @classmethod
    def vanilla(cls) -> RewardConfig:
        """The vanilla-GRPO baseline as the reference runs it (docs/PROTOCOL.md §5.6): no
        anchoring, and the format weights of its default mode — think 0.3, answer 0.2, answer
        close 0.1 — where PARA-GRPO's constrained mode pays 0.2 / 0.3 / 0.2."""
        return cls(
            anchor_lambda=0.0,
            token_anchor=False,
            think_bonus=0.3,
            answer_bonus=0.2,
            answer_close_bonus=0.1,
        )
