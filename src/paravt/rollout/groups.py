"""``RolloutGroup``: the episodes of one prompt, as the rollout hands them to the learner.

GRPO learns from groups: the generations of one prompt are scored against each other. The sampler
(TRL's repeat sampler) puts them next to each other in a step's batch, and a rank may hold a whole
group or a part of it (the learner gathers the rewards across ranks before it takes the group
advantage). A ``RolloutGroup`` is the part of a group one rank sampled: the prompt, its frame
budget ``K`` (nFrames Gating: one K per prompt and epoch), the episodes' inputs and records, and
the policy version each episode was sampled under.

``policy_versions``: the optimizer step whose weights sampled the episode (0: the weights the run
started from). In the synchronous loop every episode of a step is sampled under that step's
weights, so it is the step for every episode; the field is recorded now so that a learner that
consumes groups sampled earlier can tell how old each one is.
"""

from __future__ import annotations

from dataclasses import dataclass

from paravt.errors import ParavtError
from paravt.schema.episodes import EpisodeInput, EpisodeRecord

__all__ = ["Rollout", "RolloutGroup"]


@dataclass
class RolloutGroup:
    """One rank's episodes of one prompt, in the order they were sampled (module docstring)."""

    prompt_id: str
    frames_k: int
    inputs: list[EpisodeInput]
    records: list[EpisodeRecord]
    policy_versions: list[int]

    def __post_init__(self) -> None:
        n = len(self.inputs)
        if len(self.records) != n or len(self.policy_versions) != n:
            raise ParavtError(
                f"rollout group {self.prompt_id}: {n} inputs, {len(self.records)} records and "
                f"{len(self.policy_versions)} policy versions; each episode needs all three"
            )


@dataclass
class Rollout:
    """One rank's rollout of one step: its groups in batch order, and the epoch the step's K were
    gated for."""

    epoch: int
    groups: list[RolloutGroup]

    @classmethod
    def of_batch(
        cls,
        epoch: int,
        inputs: list[EpisodeInput],
        records: list[EpisodeRecord],
        policy_version: int | list[int],
    ) -> Rollout:
        """The batch's episodes as groups: each run of consecutive episodes of one prompt (and
        one K) is a group, so ``inputs`` and ``records`` give back the batch in its order. All
        were sampled under ``policy_version``, or each under its own (a list: bounded
        staleness, the oldest version among the episode's turns)."""
        if len(inputs) != len(records):
            raise ParavtError(f"engine returned {len(records)} records for {len(inputs)} episodes")
        versions = (
            list(policy_version)
            if isinstance(policy_version, list)
            else [policy_version] * len(inputs)
        )
        if len(versions) != len(inputs):
            raise ParavtError(f"{len(versions)} policy versions for {len(inputs)} episodes")
        groups: list[RolloutGroup] = []
        for inp, rec, version in zip(inputs, records, versions, strict=True):
            last = groups[-1] if groups else None
            if last is None or (last.prompt_id, last.frames_k) != (inp.id, inp.frames_k):
                last = RolloutGroup(inp.id, int(inp.frames_k or 0), [], [], [])
                groups.append(last)
            last.inputs.append(inp)
            last.records.append(rec)
            last.policy_versions.append(version)
        return cls(epoch, groups)

    @property
    def inputs(self) -> list[EpisodeInput]:
        return [inp for g in self.groups for inp in g.inputs]

    @property
    def records(self) -> list[EpisodeRecord]:
        return [rec for g in self.groups for rec in g.records]
