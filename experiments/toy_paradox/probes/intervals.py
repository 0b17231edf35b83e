"""Intervals and power over seeds: the toy README's one statistics module.

Why: a comparison of two recipes over three seeds was read through a pooled-variance interval
while the two arms' seed standard deviations were 29.9 and 4.8; the pooled interval excluded 0
where neither the Welch nor the paired one did. Every comparison now reports both intervals
that do not assume equal variances:

- **paired**: the t-interval of the per-seed differences (df = seeds - 1). The seed fixes the
  prompts, their order and the K draws of both arms, so the seed is the pair.
- **Welch**: the difference of the means with the Welch–Satterthwaite degrees of freedom,
  ``(va/na + vb/nb)² / ((va/na)²/(na-1) + (vb/nb)²/(nb-1))``.

A difference is claimed only when both exclude 0 (``excludes_zero``). Two arms without any
spread (every seed the same) give a zero-width interval: the difference is then exact within
those seeds, and said so (``df`` None).

``detectable`` answers the question a negative result leaves: the smallest true difference a
two-sided 5% paired t-test over these seeds finds with 80% power, from the spread of the
per-seed differences (the noncentral t, solved exactly; not the normal approximation, which at
df = 2 is 15% too optimistic).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from scipy import optimize, stats

#: the intervals' coverage and the power the smallest detectable gap is stated at
LEVEL = 0.95
POWER = 0.80
#: how the probes' intervals are made, as their JSON says
INTERVALS = ("95% t over seed means (df = seeds - 1); differences: paired by seed and Welch "
             "(Welch-Satterthwaite df); detectable_paired: the smallest gap a paired t-test over "
             "these seeds finds with 80% power")  # fmt: skip


def t_quantile(df: float, level: float = LEVEL) -> float:
    """The two-sided ``level`` quantile of Student's t (4.303 at df = 2, 1.960 as df grows)."""
    return float(stats.t.ppf(0.5 + level / 2, df))


def _cell(mean: float, half: float, df: float | None, values: Sequence[float]) -> dict:
    return {"mean": mean, "lo": mean - half, "hi": mean + half, "half_width": half, "df": df,
            "values": list(values)}  # fmt: skip


def t_interval(values: Sequence[float]) -> dict:
    """Mean and 95% t-interval over ``values`` (one per seed; df = n - 1). One value: the mean
    alone (no interval)."""
    m = statistics.fmean(values)
    if len(values) < 2:
        return {"mean": m, "values": list(values)}
    half = t_quantile(len(values) - 1) * statistics.stdev(values) / len(values) ** 0.5
    return _cell(m, half, len(values) - 1, values)


def paired(base: Sequence[float], other: Sequence[float]) -> dict:
    """other - base, seed by seed, with the t-interval of the differences."""
    if len(base) != len(other):
        raise ValueError(f"paired: {len(base)} seeds against {len(other)}; pair the same seeds")
    return t_interval([o - b for b, o in zip(base, other, strict=True)])


def welch_df(base: Sequence[float], other: Sequence[float]) -> float | None:
    """The Welch–Satterthwaite degrees of freedom (None when neither arm varies)."""
    ua, ub = (statistics.variance(x) / len(x) for x in (base, other))
    if ua + ub == 0:
        return None
    return (ua + ub) ** 2 / (ua**2 / (len(base) - 1) + ub**2 / (len(other) - 1))


def welch(base: Sequence[float], other: Sequence[float]) -> dict:
    """mean(other) - mean(base) with a 95% Welch interval (unequal variances, unpaired)."""
    if min(len(base), len(other)) < 2:
        raise ValueError("welch: each arm needs at least two seeds")
    diff = statistics.fmean(other) - statistics.fmean(base)
    df = welch_df(base, other)
    se = (statistics.variance(base) / len(base) + statistics.variance(other) / len(other)) ** 0.5
    half = 0.0 if df is None else t_quantile(df) * se
    return _cell(diff, half, df, [])


def excludes_zero(cell: dict) -> bool:
    """Whether an interval lies wholly on one side of 0 (a zero-width one at 0 does not)."""
    return cell["lo"] > 0 or cell["hi"] < 0


def compare(base: Sequence[float], other: Sequence[float]) -> dict:
    """Both intervals of other - base, and whether a difference may be claimed (both exclude
    0), with the smallest gap the seeds could detect."""
    p, w = paired(base, other), welch(base, other)
    return {"mean": w["mean"], "paired": p, "welch": w,
            "difference": excludes_zero(p) and excludes_zero(w),
            "detectable_paired": detectable(p["values"])}  # fmt: skip


def power(gap: float, sd: float, n: int, level: float = LEVEL) -> float:
    """The power of a two-sided paired t-test over ``n`` seeds whose differences spread ``sd``
    to find a true mean difference ``gap`` (the noncentral t)."""
    df = n - 1
    q = t_quantile(df, level)
    nc = gap / (sd / n**0.5)
    # the far tail (a significant result of the wrong sign) is negligible where a positive gap is
    # large, and there scipy's series can return NaN (df = 1): it counts as 0
    wrong_sign = float(stats.nct.cdf(-q, df, nc))
    return float(stats.nct.sf(q, df, nc)) + (wrong_sign if math.isfinite(wrong_sign) else 0.0)


def detectable_gap(sd: float, n: int, target: float = POWER) -> float:
    """The smallest true mean difference a two-sided paired t-test over ``n`` seeds, whose
    per-seed differences spread ``sd``, finds with ``target`` power (0.0 when ``sd`` is 0: any
    gap shows)."""
    if n < 2:
        raise ValueError(f"detectable_gap: {n} seed(s); a paired test needs two or more")
    if sd == 0:
        return 0.0
    high = sd
    while power(high, sd, n) < target:
        high *= 2
    return float(optimize.brentq(lambda g: power(g, sd, n) - target, 0.0, high, xtol=1e-9))


def detectable(differences: Sequence[float], target: float = POWER) -> float | None:
    """``detectable_gap`` for these per-seed differences (their standard deviation standing for
    the true one); None below two seeds."""
    if len(differences) < 2:
        return None
    return detectable_gap(statistics.stdev(differences), len(differences), target)
