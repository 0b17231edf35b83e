"""The toy README's intervals and power (experiments/toy_paradox/probes/intervals.py).

Why: the paradox table's headline gap was read through a pooled-variance interval that
excluded 0 while the Welch and the paired ones did not; every comparison now reports those two,
and "how large a gap could these seeds see" is a power calculation. Each formula is checked
against values it must give: Student's t table, the Welch–Satterthwaite formula written out,
scipy's own Welch test, and a power the solver must hit.
"""

from __future__ import annotations

import statistics

import pytest
from repo_files import load_repo_file
from scipy import stats

I = load_repo_file("experiments/toy_paradox/probes/intervals.py", "toy_intervals")  # noqa: E741

#: the paradox table's K = 4 accuracy by seed (results/paradox-3seeds, 60 questions each)
VANILLA = [25.0, 100 / 6, 100 / 6]
PARAGRPO = [140 / 3, 100.0, 290 / 3]


@pytest.mark.parametrize(
    ("df", "quantile"), [(1, 12.706), (2, 4.303), (4, 2.776), (9, 2.262), (30, 2.042)]
)
def test_the_t_quantile_is_students_table(df, quantile):
    assert I.t_quantile(df) == pytest.approx(quantile, abs=5e-4)


def test_a_large_sample_quantile_is_the_normal_one():
    assert I.t_quantile(1e7) == pytest.approx(1.95996, abs=1e-4)


def test_welch_is_the_satterthwaite_formula_and_scipys_test():
    va, vb = statistics.variance(VANILLA), statistics.variance(PARAGRPO)
    df = (va / 3 + vb / 3) ** 2 / ((va / 3) ** 2 / 2 + (vb / 3) ** 2 / 2)
    w = I.welch(VANILLA, PARAGRPO)
    assert w["df"] == pytest.approx(df)
    ci = stats.ttest_ind(PARAGRPO, VANILLA, equal_var=False).confidence_interval()
    assert (w["lo"], w["hi"]) == pytest.approx((ci.low, ci.high))
    # the figures: PARA-GRPO - vanilla is +61.7, Welch [-10.1, +133.4]
    assert [round(w[k], 1) for k in ("mean", "lo", "hi")] == [61.7, -10.1, 133.4]


def test_paired_is_the_t_interval_of_the_seed_differences():
    p = I.paired(VANILLA, PARAGRPO)
    assert [round(p[k], 1) for k in ("mean", "lo", "hi")] == [61.7, -24.5, 147.8]
    ci = stats.ttest_rel(PARAGRPO, VANILLA).confidence_interval()
    assert (p["lo"], p["hi"]) == pytest.approx((ci.low, ci.high))


def test_a_difference_is_claimed_only_where_both_intervals_exclude_zero():
    gap = I.compare(VANILLA, PARAGRPO)
    assert not gap["difference"]  # neither excludes 0
    # the tool-use gap: vanilla called on 20, 0 and 0% of the K = 4 questions, PARA-GRPO on all
    tools = I.compare([20.0, 0.0, 0.0], [100.0, 100.0, 100.0])
    assert tools["difference"] and tools["paired"]["lo"] > 0 and tools["welch"]["lo"] > 0
    # the Welch interval excludes 0, the paired one does not: no difference is claimed
    split = I.compare([0.0, 10.0, 20.0], [50.0, 40.0, 30.0])  # seeds trade places
    assert I.excludes_zero(split["welch"]) and not I.excludes_zero(split["paired"])
    assert not split["difference"]


def test_arms_without_spread_give_an_exact_difference():
    w = I.welch([100.0, 100.0, 100.0], [0.0, 0.0, 0.0])
    assert w["df"] is None and w["lo"] == w["hi"] == -100.0
    assert I.excludes_zero(w)
    assert not I.excludes_zero(I.welch([5.0, 5.0], [5.0, 5.0]))


def test_the_detectable_gap_has_the_power_it_states():
    # k = 2 - k = 0 at K = 4, three seeds: +13.3, 0, -13.3 (results/server-staleness-3seeds)
    diffs = [40 / 3, 0.0, -40 / 3]
    gap = I.detectable(diffs)
    assert I.power(gap, statistics.stdev(diffs), 3) == pytest.approx(0.80, abs=1e-6)
    assert round(gap) == 44  # the "about 44 points"
    # many seeds: the normal approximation (z_.975 + z_.80) sd / sqrt(n)
    assert I.detectable_gap(10.0, 400) == pytest.approx((1.95996 + 0.84162) * 10 / 20, rel=5e-3)


def test_more_seeds_detect_smaller_gaps_and_power_rises_with_the_gap():
    gaps = [I.detectable_gap(13.3, n) for n in (3, 5, 10)]
    assert gaps == sorted(gaps, reverse=True)
    assert I.power(10, 13.3, 5) < I.power(20, 13.3, 5) < I.power(40, 13.3, 5)


def test_two_seeds_have_a_finite_detectable_gap():
    """df = 1: scipy's far tail can be NaN; it counts as 0, and the solver still converges."""
    gap = I.detectable([0.0, -5.0])
    assert gap is not None and I.power(gap, statistics.stdev([0.0, -5.0]), 2) == pytest.approx(0.8)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="pair the same seeds"):
        I.paired([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="at least two seeds"):
        I.welch([1.0], [1.0, 2.0])
    assert I.detectable([3.0]) is None and I.detectable([2.0, 2.0]) == 0.0
