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
