"""``paravt.train.advantages.group_advantages``: GRPO's group advantage, checked with numbers.

The oracle is written out by hand per case (means, Bessel-corrected spreads), not with the
function's own formula, so a changed rule fails here before it reaches a training run.
"""

from __future__ import annotations

import math

import pytest
import torch

from paravt.train.advantages import STD_EPS, group_advantages

NAN = math.nan


def _t(values):
    return torch.tensor(values, dtype=torch.float32)


def test_group_scaling_centres_and_divides_by_each_groups_spread():
    # group 1: mean 2, sample std 1; group 2: mean 10, sample std 2
    out = group_advantages(_t([1.0, 2.0, 3.0, 8.0, 10.0, 12.0]), 3, "group")
    expected = [
        -1 / (1 + STD_EPS),
        0.0,
        1 / (1 + STD_EPS),
        -2 / (2 + STD_EPS),
        0.0,
        2 / (2 + STD_EPS),
    ]
    assert out.advantages.tolist() == pytest.approx(expected, rel=1e-6)
    assert out.zero_var.tolist() == [False] * 6 and out.zero_var_share == 0.0


def test_batch_scaling_divides_by_the_whole_batchs_spread():
    rewards = [0.0, 2.0, 4.0, 6.0]  # groups of 2: means 1 and 5; batch sample std = sqrt(20/3)
    batch_std = math.sqrt(sum((r - 3.0) ** 2 for r in rewards) / 3)
    out = group_advantages(_t(rewards), 2, "batch")
    expected = [d / (batch_std + STD_EPS) for d in (-1.0, 1.0, -1.0, 1.0)]
    assert out.advantages.tolist() == pytest.approx(expected, rel=1e-6)
    assert out.zero_var.tolist() == [False] * 4  # zero variance is always the group's


def test_no_scaling_only_centres():
    out = group_advantages(_t([1.0, 3.0, 5.0, 5.0]), 2, "none")
    assert out.advantages.tolist() == pytest.approx([-1.0, 1.0, 0.0, 0.0])
    assert out.zero_var.tolist() == [False, False, True, True]
    assert out.zero_var_share == 0.5


def test_failed_episodes_are_left_out_and_get_no_advantage():
    # group 1: one failure, the other two (1, 3) set mean 2 and std sqrt(2)
    # group 2: a single scored episode has no spread (zero variance); group 3: all failed
    out = group_advantages(_t([1.0, NAN, 3.0, 4.0, NAN, NAN, NAN, NAN, NAN]), 3, "group")
    s = math.sqrt(2.0)
    expected = [-1 / (s + STD_EPS), 0.0, 1 / (s + STD_EPS), 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert out.advantages.tolist() == pytest.approx(expected, rel=1e-6)
    assert not torch.isnan(out.advantages).any()
    assert out.zero_var.tolist() == [False] * 3 + [True] * 6
    assert out.zero_var_share == pytest.approx(2 / 3)


@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_a_group_of_one_has_no_spread_and_no_advantage(scale):
    out = group_advantages(_t([0.2, 1.0, NAN]), 1, scale)
    assert out.advantages.tolist() == [0.0, 0.0, 0.0]
    assert out.zero_var.all() and out.zero_var_share == 1.0


def test_a_flat_group_gets_zero_not_nan():
    out = group_advantages(_t([0.7, 0.7, 0.1, 0.9]), 2, "group")
    assert out.advantages[:2].tolist() == [0.0, 0.0]
    assert out.zero_var.tolist() == [True, True, False, False]


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="scale_rewards='mean'"):
        group_advantages(_t([1.0, 2.0]), 2, "mean")
    with pytest.raises(ValueError, match="do not form groups of 2"):
        group_advantages(_t([1.0, 2.0, 3.0]), 2, "group")


# --------------------------------------------------------------------------- the reference's options


def test_the_reward_map_shifts_scales_and_clips_as_the_reference_does():
    """(R − 0.2) × 10 clipped to ±20: every R ≥ 2.2 is the same 20; a failure stays NaN."""
    from paravt.train.advantages import mapped_rewards

    out = mapped_rewards(_t([0.0, 1.0, 2.2, 2.4, 2.8, -3.0, NAN]), -0.2, 10.0, 20.0)
    assert out[:6].tolist() == pytest.approx([-2.0, 8.0, 20.0, 20.0, 20.0, -20.0])
    assert math.isnan(out[6].item())
    assert torch.equal(mapped_rewards(_t([0.5, 2.9])), _t([0.5, 2.9]))  # the defaults: identity
    # two correct answers 2.4 and 2.8 are one group's spread under paravt's GRPO, none under the
    # reference's clip
    plain = group_advantages(_t([2.4, 2.8]), 2, "group")
    clipped = group_advantages(mapped_rewards(_t([2.4, 2.8]), -0.2, 10.0, 20.0), 2, "group")
    assert plain.zero_var_share == 0.0 and clipped.zero_var_share == 1.0


def test_the_kl_reward_is_summed_to_the_end_over_generated_tokens():
    """Oracle by hand: log-ratios 0.1, 0.2, (a tool token: 5.0), 0.4; coefficient 0.01."""
    from paravt.train.advantages import kl_to_go

    behaviour = _t([[0.1, 0.2, 5.0, 0.4], [0.0, 0.0, 0.0, 0.0]])
    reference = torch.zeros(2, 4)
    mask = _t([[1, 1, 0, 1], [1, 1, 0, 0]])
    out = kl_to_go(behaviour, reference, mask, 0.01)
    expected = [[-0.007, -0.006, 0.0, -0.004], [0.0, 0.0, 0.0, 0.0]]
    assert out.tolist()[0] == pytest.approx(expected[0], abs=1e-9)
    assert out.tolist()[1] == pytest.approx(expected[1], abs=1e-9)


def test_batch_normalisation_uses_every_generated_token_of_every_rank():
    """One rank's rows normalised with another rank's statistics added (``total``) equal the
    two ranks' rows normalised together; the mean and the spread are the tokens', by hand."""
    from paravt.train.advantages import BATCH_EPS, batch_normalised

    here, there = _t([1.0, -1.0]), _t([3.0])
    mask_here, mask_there = _t([[1, 1, 0], [1, 0, 0]]), _t([[1, 1, 1]])
    # tokens: 1, 1, -1 (here) and 3, 3, 3 (there): mean 5/3, sample variance by hand
    tokens = [1.0, 1.0, -1.0, 3.0, 3.0, 3.0]
    mean = sum(tokens) / 6
    std = math.sqrt(sum((x - mean) ** 2 for x in tokens) / 5)
    x_there = there.unsqueeze(1).expand(1, 3).double() * mask_there.double()
    other = torch.stack([x_there.sum(), (x_there**2).sum(), mask_there.double().sum()])
    out = batch_normalised(here, mask_here, lambda t: t + other)
    expected = [
        [(1 - mean) / (std + BATCH_EPS)] * 2 + [0.0],
        [(-1 - mean) / (std + BATCH_EPS), 0, 0],
    ]
    assert out.tolist()[0] == pytest.approx(expected[0], rel=1e-6)
    assert out.tolist()[1] == pytest.approx(expected[1], rel=1e-6)
    # a zero-variance group's advantage 0 becomes minus the batch mean over the spread
    flat = batch_normalised(_t([0.0, 2.0]), _t([[1, 1], [1, 1]]))
    assert flat[0, 0].item() < 0 and flat[0, 0].item() == pytest.approx(-flat[1, 0].item())


def test_shaping_is_the_identity_by_default_and_refuses_a_missing_kl_input():
    from paravt.rewards import RewardConfig
    from paravt.train.advantages import shaped_advantages

    adv, mask = _t([0.5, -0.5]), _t([[1, 1], [1, 0]])
    assert torch.equal(shaped_advantages(adv, mask, RewardConfig()), adv)
    with pytest.raises(ValueError, match="behaviour and the reference"):
        shaped_advantages(adv, mask, RewardConfig(kl_in_reward=0.01))
