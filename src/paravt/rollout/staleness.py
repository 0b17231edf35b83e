"""How old each consumed episode is, and which groups are too old to learn from.

With ``trainer.max_staleness = k`` the learner at policy version ``v`` (optimizer steps taken)
consumes episodes whose turns were sampled under versions ``v - k .. v`` (``paravt.rollout.
gate`` records each turn's). An episode's staleness is ``v`` minus the oldest version among its
sampled turns: a partial rollout (turns on both sides of a push) counts by its oldest turn.

GRPO scores an episode against the others of its prompt, so what is kept or dropped is a
whole group: one episode older than ``k``, or one whose version cannot be established (an
episode that sampled tokens with no version recorded), drops its group, and the group is
sampled again under the current weights before the step learns. The decision is taken on the
gathered batch (a group's episodes may sit on several ranks), so every rank drops the same
groups. Episodes that failed carry no loss and are never stale.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from paravt.schema.episodes import EpisodeRecord

__all__ = ["StalenessLog", "episode_staleness", "groups_to_drop"]


def turn_versions(record: EpisodeRecord) -> list[int | None]:
    """The policy version of each of the episode's main-agent turns (``None``: not sampled by
    the policy, such as a forced first turn, or unknown)."""
    return [t.policy_version for t in record.turns]


def episode_staleness(record: EpisodeRecord, version: int) -> int | None:
    """``version`` minus the oldest version that sampled one of the episode's turns; 0 for a
    failed episode (it is not learned from); ``None`` when no turn carries a version."""
    if record.status != "ok" or not record.turns:
        return 0
    known = [v for v in turn_versions(record) if v is not None]
    return version - min(known) if known else None


def groups_to_drop(staleness: list[int | None], group_size: int, k: int) -> list[bool]:
    """Per episode of the gathered batch (in batch order, groups of ``group_size`` consecutive
    episodes): whether its group is dropped, because one of its episodes is older than ``k``
    or of unknown age."""
    drop = []
    for at in range(0, len(staleness), group_size):
        group = staleness[at : at + group_size]
        bad = any(s is None or s > k for s in group)
        drop.extend([bad] * len(group))
    return drop


@dataclass
class StalenessLog:
    """What one step consumed: each episode's staleness after any regeneration, the groups
    dropped and episodes sampled again (all ranks), and how long the learner waited."""

    staleness: list[int] = field(default_factory=list)
    groups_dropped: int = 0
    episodes_regenerated: int = 0
    wait_s: float = 0.0
    push_s: float = 0.0
    #: this rank's turns that were running at the step's push and went on across it
    turns_across_push: int = 0

    def metrics(self) -> dict[str, float]:
        """The step's ``async/*`` metrics."""
        s = self.staleness or [0]
        return {
            "async/staleness_mean": sum(s) / len(s),
            "async/staleness_max": float(max(s)),
            "async/share_one_or_more_back": sum(1 for x in s if x >= 1) / len(s),
            "async/groups_dropped": float(self.groups_dropped),
            "async/episodes_regenerated": float(self.episodes_regenerated),
            "async/wait_s": self.wait_s,
            "async/push_s": self.push_s,
            "async/turns_across_push": float(self.turns_across_push),
        }
