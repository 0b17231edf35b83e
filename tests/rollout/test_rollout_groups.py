"""``paravt.rollout.groups``: a step's episodes become groups of one prompt, in batch order, each
episode with the policy version it was sampled under."""

from __future__ import annotations

import pytest

from paravt.errors import ParavtError
from paravt.rollout.groups import Rollout, RolloutGroup
from paravt.schema.episodes import EpisodeInput, EpisodeRecord


def _episode(prompt_id: str, k: int, n: int) -> tuple[EpisodeInput, EpisodeRecord]:
    inp = EpisodeInput(prompt_id, "v.mp4", "q?", frames_k=k)
    rec = EpisodeRecord(prompt_id, "v.mp4", f"q{n}?", "mcq", None, None, "parallel", "frames")
    return inp, rec


def test_a_batch_becomes_groups_of_one_prompt_in_its_order():
    # TRL's repeat sampler puts a prompt's generations next to each other; a rank may hold the
    # end of one group and the start of the next, and a prompt seen again later (another epoch's
    # K) is a group of its own
    layout = [("p1", 4), ("p1", 4), ("p2", 8), ("p2", 8), ("p2", 8), ("p1", 6)]
    pairs = [_episode(p, k, n) for n, (p, k) in enumerate(layout)]
    inputs, records = [i for i, _ in pairs], [r for _, r in pairs]
    rollout = Rollout.of_batch(2, inputs, records, policy_version=5)
    assert [(g.prompt_id, g.frames_k, len(g.records)) for g in rollout.groups] == [
        ("p1", 4, 2),
        ("p2", 8, 3),
        ("p1", 6, 1),
    ]
    assert rollout.inputs == inputs and rollout.records == records  # the batch, in its order
    assert [g.policy_versions for g in rollout.groups] == [[5, 5], [5, 5, 5], [5]]
    assert rollout.epoch == 2


def test_a_group_or_batch_whose_parts_disagree_is_refused():
    inp, rec = _episode("p1", 4, 0)
    with pytest.raises(ParavtError, match="engine returned 0 records for 1 episodes"):
        Rollout.of_batch(0, [inp], [], policy_version=0)
    with pytest.raises(ParavtError, match="rollout group p1: 1 inputs, 1 records and 0 policy"):
        RolloutGroup("p1", 4, [inp], [rec], [])
