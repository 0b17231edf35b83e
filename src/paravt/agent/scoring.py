"""The reward of one finished episode record: the one place a record meets ``compose``.

Why here: the trainer scores its rollouts and the toy oracle is checked by the same reward, and
both used to call ``compose`` on a record in their own way (one with the turns one by one and
the question, the other with the joined text and without it), so the two could disagree about
one episode. The agent room owns the record; the reward room cannot import it.
"""

from __future__ import annotations

from paravt.rewards import RewardBreakdown, RewardConfig, compose
from paravt.schema.episodes import EpisodeRecord

__all__ = ["episode_reward"]


def episode_reward(record: EpisodeRecord, cfg: RewardConfig | None = None) -> RewardBreakdown:
    """docs/PROTOCOL.md §5.1's reward of ``record``: one text per turn (the final turn is
    explicit), the execution record's counts, the engine's final answer (the forced turn
    included, never an earlier tool turn's) and the question (reasoning that only restates it
    earns no think term)."""
    return compose(
        record.prefix,
        [t.text for t in record.turns],
        record.tool_counts,
        record.gold,
        record.question_type,
        record.options,
        cfg or RewardConfig(),
        answer=record.prediction if record.prediction is not None else "",
        question=record.question,
    )
