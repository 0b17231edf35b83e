"""The toy experiment's claims: each number of its lab log, experiments/toy_paradox/LOG.md,
recomputed from the raw files of its run under ``experiments/toy_paradox/results/``
(``claimkit``). The guide beside it (README.md) has its own, ``claims_guide``.

Ordered as the log's sections, each keyed by its heading (``within``) and its text, so a
claim follows its text when the lab log is reordered or moved. Seed comparisons run the probes'
own code (``run_numbers``, ``intervals``) on the committed files, not the tables those probes
wrote.
"""

from __future__ import annotations

import functools
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from claimkit import (
    ONE,
    REPO,
    TOY,
    TWO,
    Claim,
    Getter,
    acc,
    answers,
    at_step,
    calls,
    fill,
    fixed,
    pct,
    pct1,
    raw,
    read_json,
    read_lines,
    right,
    said,
    seconds,
    share,
    steps_of,
    use,
)

sys.path.insert(0, str(REPO / "experiments/toy_paradox/probes"))
import intervals  # noqa: E402
from staleness_compare import run_numbers  # noqa: E402

DOC = "experiments/toy_paradox/LOG.md"


def toy(within: str, source: str, template: str, *parts: Getter) -> Claim:
    """A sentence or row of the toy lab log (in the section ``within``) whose numbers are read
    from ``source`` (under the toy results folder)."""
    return said(DOC, f"{TOY}/{source}", fill(template, *parts), within)


# --------------------------------------------------------------------------- seeds and intervals


@functools.cache
def numbers(folder: str, run: str) -> dict:
    """One RL run's learning numbers from its raw files (staleness_compare's ``run_numbers``)."""
    root = REPO / TOY / folder
    return run_numbers(root, run, read_json(root / "results.json"))


def seeds(folder: str, runs: Sequence[str], key: str) -> list[float]:
    """``key`` of each run, in order (one run a seed)."""
    return [numbers(folder, run)[key] for run in runs]


def t_cell(cell: dict, decimals: int = 1, sign: str = "") -> str:
    """A t-interval as the log writes it: "46.7 [30.1, 63.3]" (not clipped to 0-100)."""
    d = decimals
    return f"{cell['mean']:{sign}.{d}f} [{cell['lo']:.{d}f}, {cell['hi']:.{d}f}]"


def bounds(cell: dict, decimals: int = 1) -> str:
    return f"[{cell['lo']:.{decimals}f}, {cell['hi']:.{decimals}f}]"


Values = Callable[[], list[float]]


def over_seeds(values: Values, decimals: int = 1) -> Getter:
    """The mean over seeds with its t-interval."""
    return lambda _: t_cell(intervals.t_interval(values()), decimals)


def mean_of(values: Values, form: Callable[[float], str] = ONE) -> Getter:
    return lambda _: form(statistics.fmean(values()))


def each(values: Values, form: Callable[[float], str] = ONE, sep: str = ", ") -> Getter:
    """Every seed's value, ``sep`` between (the last two joined by " and " with ``sep=None``)."""

    def text(_: Path) -> str:
        shown = [form(v) for v in values()]
        return sep.join(shown) if sep else ", ".join(shown[:-1]) + f" and {shown[-1]}"

    return text


def gap(base: Values, other: Values, part: str, decimals: int = 1) -> Getter:
    """One part of other - base (``intervals.compare``): "mean" (signed), "welch" or "paired"
    (the bounds), "detectable" (the gap found with 80% power) or "half" (the paired half-width)."""

    def text(_: Path) -> str:
        c = _compare(tuple(base()), tuple(other()))
        d = decimals
        if part == "mean":
            return f"{c['mean']:+.{d}f}"
        if part == "detectable":
            return f"{c['detectable_paired']:.{d}f}"
        if part == "half":
            return f"{c['paired']['half_width']:.{d}f}"
        return bounds(c[part], d)

    return text


@functools.cache
def _compare(base: tuple[float, ...], other: tuple[float, ...]) -> dict:
    """intervals.compare, once for each pair of arms (its power solve is the slow part)."""
    return intervals.compare(base, other)


def metric_mean(folder: str, run: str, key: str, form: Callable[[float], str] = TWO) -> Getter:
    """The mean of a per-step number over a run's steps (its ``metrics.jsonl``)."""
    return lambda _: form(statistics.fmean(r[key] for r in run_steps(folder, run)))


def run_steps(folder: str, run: str) -> list[dict]:
    return list(steps_of(REPO / TOY / folder / f"rl-{run}-metrics.jsonl").values())


# --------------------------------------------------------------------------- the paradox table

PARADOX = "paradox-3seeds"
PARADOX_IN = "The paradox table, three seeds"
RECIPES = {"vanilla_grpo": "vanilla GRPO", "anchor_only": "anchoring only",
           "gating_only": "gating only", "paragrpo": "PARA-GRPO"}  # fmt: skip
#: the paradox table's columns (run_numbers' keys), in the log's order
PARADOX_COLUMNS = ("acc_k4", "acc_k64", "tool_use_k4", "tool_use_k64", "kappa_last5")


def arm(recipe: str, key: str, folder: str = PARADOX) -> Values:
    return lambda: seeds(folder, [f"weak-{recipe}-s{s}" for s in (0, 1, 2)], key)


def paradox_row(recipe: str) -> Claim:
    cells = " | ".join("{}" for _ in PARADOX_COLUMNS)
    return toy(
        PARADOX_IN, PARADOX, f"| {RECIPES[recipe]} | {cells} | {{}} |",
        *(over_seeds(arm(recipe, k)) for k in PARADOX_COLUMNS),
        mean_of(arm(recipe, "r_fmt_last5"), fixed(2)),
    )  # fmt: skip


def paradox_gap_row(recipe: str, base: str) -> Claim:
    acc4, tools = (arm(base, "acc_k4"), arm(recipe, "acc_k4")), (
        arm(base, "tool_use_k4"), arm(recipe, "tool_use_k4"))  # fmt: skip
    return toy(
        PARADOX_IN, PARADOX, f"| {RECIPES[recipe]} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} |",
        *(gap(*acc4, part) for part in ("mean", "welch", "paired", "detectable")),
        *(gap(*tools, part) for part in ("mean", "welch", "paired")),
    )  # fmt: skip


def vanilla_steps(key: str) -> Getter:
    """A per-step number of the vanilla runs, averaged over each seed's 12 steps."""
    return lambda p: ", ".join(
        f"{statistics.fmean(r[key] for r in run_steps(PARADOX, f'weak-vanilla_grpo-s{s}')):.2f}"
        for s in (0, 1)
    ) + " and " + metric_mean(PARADOX, "weak-vanilla_grpo-s2", key)(p)  # fmt: skip


PARADOX_CLAIMS = [
    *(paradox_row(r) for r in RECIPES),
    *(paradox_gap_row(r, "vanilla_grpo") for r in ("anchor_only", "gating_only", "paragrpo")),
    *(paradox_gap_row(r, "paragrpo") for r in ("anchor_only", "gating_only")),
    toy(PARADOX_IN, PARADOX,
        "K = 4 accuracy by seed (0, 1, 2): PARA-GRPO {}; vanilla GRPO {}; anchoring only {} in all "
        "three; gating only {}.",
        each(arm("paragrpo", "acc_k4"), sep=None), each(arm("vanilla_grpo", "acc_k4"), sep=None),
        mean_of(arm("anchor_only", "acc_k4")), each(arm("gating_only", "acc_k4"), sep=None)),
    toy(PARADOX_IN, PARADOX, "| from sft-weak (K = 4 {}, K = 64 {}) |",
        acc("eval/sft-weak-4"), acc("eval/sft-weak-64")),
    toy(PARADOX_IN, PARADOX, "against vanilla ({}, Welch and paired {}) and against each ablation "
        "({} in every seed)",
        gap(arm("vanilla_grpo", "tool_use_k4"), arm("paragrpo", "tool_use_k4"), "mean"),
        gap(arm("vanilla_grpo", "tool_use_k4"), arm("paragrpo", "tool_use_k4"), "paired"),
        gap(arm("paragrpo", "tool_use_k4"), arm("anchor_only", "tool_use_k4"), "mean")),
    toy(PARADOX_IN, PARADOX, "vanilla GRPO calls on {}% at K = 4",
        each(arm("vanilla_grpo", "tool_use_k4"), fixed(0), sep=None)),
    toy(PARADOX_IN, PARADOX, "K = 4 accuracy is {} points over vanilla, but neither interval "
        "excludes 0 (Welch {}, paired {}), nor do the ablations' {} and {} points against "
        "PARA-GRPO (Welch {} and {}).",
        *(gap(arm("vanilla_grpo", "acc_k4"), arm("paragrpo", "acc_k4"), p)
          for p in ("mean", "welch", "paired")),
        *(gap(arm("paragrpo", "acc_k4"), arm(r, "acc_k4"), "mean")
          for r in ("anchor_only", "gating_only")),
        *(gap(arm("paragrpo", "acc_k4"), arm(r, "acc_k4"), "welch")
          for r in ("anchor_only", "gating_only"))),
    toy(PARADOX_IN, PARADOX, "right colour on {}% of them at step 12",
        lambda p: f"{min(arm('paragrpo', 'acc_k4')()):.1f}"),
    toy(PARADOX_IN, PARADOX, "(t = {} at df = 2) one such seed widens the paired interval to ±{} "
        "points",
        lambda _: f"{intervals.t_quantile(2):.2f}",
        gap(arm("vanilla_grpo", "acc_k4"), arm("paragrpo", "acc_k4"), "half", 0)),
    toy(PARADOX_IN, PARADOX, "and they are {} and {} points.",
        lambda _: f"{statistics.stdev(arm('paragrpo', 'acc_k4')()):.1f}",
        lambda _: f"{statistics.stdev(arm('vanilla_grpo', 'acc_k4')()):.1f}"),
    toy(PARADOX_IN, PARADOX, "found with 80% power is {} points for anchoring only against "
        "vanilla and {} for gating only (their seeds agree), and {} points for PARA-GRPO against "
        "vanilla (PARA-GRPO's seeds spread {}-{})",
        *(gap(arm("vanilla_grpo", "acc_k4"), arm(r, "acc_k4"), "detectable")
          for r in ("anchor_only", "gating_only", "paragrpo")),
        lambda _: f"{min(arm('paragrpo', 'acc_k4')()):.1f}",
        lambda _: f"{max(arm('paragrpo', 'acc_k4')()):g}"),
    toy(PARADOX_IN, PARADOX, "(a parse-failure rate of {} over the 12 steps of seeds 0, 1 and 2) "
        "and its training accuracy at K = 64 is {}, while the same checkpoint scores {} greedily",
        vanilla_steps("tools/parse_failure_rate"), vanilla_steps("reward/acc"),
        acc("eval/sft-weak-64")),
    toy(PARADOX_IN, PARADOX, "(K = 64 {} in all three seeds) and, at K = 4, rarely calls (tool use "
        "{}%) and guesses ({}%, the prior's {}). Its format reward stays low (R_fmt {}:",
        lambda p: pct(statistics.fmean(arm("vanilla_grpo", "acc_k64")()) / 100),
        each(arm("vanilla_grpo", "tool_use_k4"), fixed(0), sep=None),
        mean_of(arm("vanilla_grpo", "acc_k4")), acc("eval/sft-weak-4"),
        mean_of(arm("vanilla_grpo", "r_fmt_last5"), fixed(2))),
    toy(PARADOX_IN, PARADOX, "κ {}% over the last 5 steps, R_tool {} a seed over its 12 steps, and "
        "K = 64 tool use {}%.",
        mean_of(arm("anchor_only", "kappa_last5")),
        lambda p: ", ".join(metric_mean(PARADOX, f"weak-anchor_only-s{s}", "reward/tool")(p)
                            for s in (0, 1)) + " and "
        + metric_mean(PARADOX, "weak-anchor_only-s2", "reward/tool")(p),
        mean_of(arm("anchor_only", "tool_use_k64"), fixed(0))),
    toy(PARADOX_IN, PARADOX, "stays at the prior ({}% in every seed); at K = 64 one seed broke ({}%).",
        mean_of(arm("anchor_only", "acc_k4")),
        lambda _: f"{min(arm('anchor_only', 'acc_k64')()):.1f}"),
    toy(PARADOX_IN, PARADOX, "calls in training (κ {}%), but its format reward stays low (R_fmt {}, "
        "against PARA-GRPO's {}: {}, Welch {}, paired {}) and its greedy policy never calls ({}%).",
        mean_of(arm("gating_only", "kappa_last5")),
        mean_of(arm("gating_only", "r_fmt_last5"), fixed(2)),
        mean_of(arm("paragrpo", "r_fmt_last5"), fixed(2)),
        *(gap(arm("gating_only", "r_fmt_last5"), arm("paragrpo", "r_fmt_last5"), p, 2)
          for p in ("mean", "welch", "paired")),
        mean_of(arm("gating_only", "acc_k4"))),
]  # fmt: skip

CLAIMS: list[Claim] = [*PARADOX_CLAIMS]


# --------------------------------------------------------------------------- k = 0 against k = 2

STALE = "server-staleness-3seeds"
STALE_IN = "k = 0 against k = 2 through a vLLM server, three seeds"
#: the k = 0 / k = 2 table's rows: (label, run_numbers' key, decimals)
STALE_ROWS = (("accuracy at K = 4 (60 q)", "acc_k4", 1), ("accuracy at K = 64 (24 q)", "acc_k64", 1),
              ("tool use at K = 4", "tool_use_k4", 1), ("tool use at K = 64", "tool_use_k64", 1),
              ("κ, training, last 5 steps", "kappa_last5", 1),
              ("R_fmt, last 5 steps", "r_fmt_last5", 2))  # fmt: skip


def at_k(k: int, key: str, folder: str = STALE, n: int = 3) -> Values:
    return lambda: seeds(folder, [f"weak-paragrpo-server-k{k}-s{s}" for s in range(n)], key)


def stale_row(label: str, key: str, d: int) -> Claim:
    k0, k2 = at_k(0, key), at_k(2, key)

    def paired(_: Path) -> str:
        return t_cell(intervals.paired(k0(), k2()), d, "+")

    return toy(STALE_IN, STALE, f"| {label} | {{}} | {{}} | {{}} | {{}} | {{}} |",
               over_seeds(k0, d), over_seeds(k2, d), paired, gap(k0, k2, "welch", d),
               gap(k0, k2, "detectable", d))  # fmt: skip


def truncation(form: str) -> Getter:
    """How much of the k = 2 runs' tokens the importance-weight truncation touched."""
    key = "sampling/importance_sampling_ratio/truncated_share"

    def text(p: Path) -> str:
        shares = [r[key] for s in range(3)
                  for r in run_steps(STALE, f"weak-paragrpo-server-k2-s{s}") if key in r]  # fmt: skip
        return form.format(100 * statistics.fmean(shares), 100 * max(shares),
                           sum(x > 0 for x in shares), len(shares))  # fmt: skip

    return text


def train_seconds(folder: str, prefix: str) -> float:
    commands = read_json(REPO / TOY / folder / "results.json")["commands"]
    return sum(v["seconds"] for n, v in commands.items() if n.startswith(prefix))


STALE_CLAIMS = [
    *(stale_row(*row) for row in STALE_ROWS),
    toy(STALE_IN, STALE, "| from sft-weak (K = 4 {}) |", acc("eval/sft-weak-4")),
    toy(STALE_IN, STALE, "(K = 4 {}, K = 64 {}, tool use 0% at both)",
        acc("eval/sft-weak-4"), acc("eval/sft-weak-64")),
    toy(STALE_IN, STALE, "accuracy at K = 4: k = 0 {}; k = 2 {}. At K = 64: k = 0 {}; k = 2 {}.",
        each(at_k(0, "acc_k4")), each(at_k(2, "acc_k4")),
        each(at_k(0, "acc_k64")), each(at_k(2, "acc_k64"))),
    toy(STALE_IN, STALE, "by the same {} points), so the paired interval is ±{} points and a true "
        "gap of {} points would be found only four times in five; at K = 64 that gap is {} points, "
        "and k = 2 is lower in {} of the 3 seeds.",
        lambda _: f"{at_k(2, 'acc_k4')()[0] - at_k(0, 'acc_k4')()[0]:.1f}",
        gap(at_k(0, "acc_k4"), at_k(2, "acc_k4"), "half"),
        gap(at_k(0, "acc_k4"), at_k(2, "acc_k4"), "detectable"),
        gap(at_k(0, "acc_k64"), at_k(2, "acc_k64"), "detectable"),
        lambda _: str(sum(b < a for a, b in zip(at_k(0, "acc_k64")(), at_k(2, "acc_k64")(),
                                                strict=True)))),
    toy(STALE_IN, STALE, "no cost shown, none under {} points excluded",
        lambda p: f"{float(gap(at_k(0, 'acc_k4'), at_k(2, 'acc_k4'), 'detectable')(p)):.0f}"),
    toy(STALE_IN, STALE, "and none under {} points at K = 4 is excluded",
        lambda p: f"{float(gap(at_k(0, 'acc_k4'), at_k(2, 'acc_k4'), 'detectable')(p)):.0f}"),
    toy(STALE_IN, STALE, "the staleness consumed was {} steps on average and {} at most",
        mean_of(at_k(2, "staleness_mean"), fixed(2)), lambda _: f"{max(at_k(2, 'staleness_max')()):.0f}"),
    toy(STALE_IN, STALE, "The importance-weight truncation touched {} of the tokens on average",
        truncation("{:.2f}%")),
    toy(STALE_IN, STALE, "({} in the worst step; {} of {} steps touched any)",
        lambda p: truncation("{1:.2f}%")(p), lambda p: truncation("{2}")(p),
        lambda p: truncation("{3}")(p)),
    toy(STALE_IN, STALE, "k = 2 trained in {} s over its three runs against {} s for k = 0 ({}×)",
        lambda _: f"{train_seconds(STALE, 'rl-weak-paragrpo-server-k2-'):.0f}",
        lambda _: f"{train_seconds(STALE, 'rl-weak-paragrpo-server-k0-'):.0f}",
        lambda _: f"{train_seconds(STALE, 'rl-weak-paragrpo-server-k2-') / train_seconds(STALE, 'rl-weak-paragrpo-server-k0-'):.2f}"),
]  # fmt: skip

CLAIMS += STALE_CLAIMS


# --------------------------------------------------------------------------- the two samplers

SAMPLERS = "samplers-3x3"
SAMPLERS_IN = "The two samplers, 3 + 3 seeds"
INFIX = {"hf": "", "vLLM": "-vllm"}


def sampler(name: str, key: str, folder: str = SAMPLERS, n: int = 3) -> Values:
    return lambda: seeds(folder, [f"weak-paragrpo{INFIX[name]}-s{s}" for s in range(n)], key)


def sci(x: float) -> str:
    """``3.6e-7`` as the log writes a tiny number (no exponent padding)."""
    mantissa, exponent = f"{x:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def sampler_seed_row(name: str, s: int) -> Claim:
    run = f"weak-paragrpo{INFIX[name]}-s{s}"
    logp = "sampling/sampling_logp_difference/mean"

    def log_gap(_: Path) -> str:
        values = [r[logp] for r in run_steps(SAMPLERS, run) if r.get(logp) is not None]
        return sci(max(values)) if values else "—"

    def trained(_: Path) -> str:
        return f"{sum(r['step_time'] for r in run_steps(SAMPLERS, run)):.0f} s"

    ev = f"eval/rl-{run}"
    return toy(SAMPLERS_IN, SAMPLERS, f"| {name} | {s} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} |",
               acc(f"{ev}-4"), use(f"{ev}-4"), acc(f"{ev}-64"), use(f"{ev}-64"),
               lambda _: f"{numbers(SAMPLERS, run)['kl_last5']:.4f}", log_gap, trained)  # fmt: skip


def sampler_cells(k: int, part: str) -> Getter:
    hf, vllm = sampler("hf", f"acc_k{k}"), sampler("vLLM", f"acc_k{k}")
    if part == "paired":
        return lambda _: t_cell(intervals.paired(hf(), vllm()))
    return gap(hf, vllm, part)


SAMPLER_CLAIMS = [
    *(sampler_seed_row(n, s) for n in INFIX for s in range(3)),
    *(toy(SAMPLERS_IN, SAMPLERS, f"| {n} sampler | {{}} | {{}} |",
          over_seeds(sampler(n, "acc_k4")), over_seeds(sampler(n, "acc_k64"))) for n in INFIX),
    toy(SAMPLERS_IN, SAMPLERS, "| vLLM − hf, paired | {} | {} |",
        sampler_cells(4, "paired"), sampler_cells(64, "paired")),
    toy(SAMPLERS_IN, SAMPLERS, "| vLLM − hf, Welch | {} | {} |",
        sampler_cells(4, "welch"), sampler_cells(64, "welch")),
    toy(SAMPLERS_IN, SAMPLERS, "| found with 80% power | {} | {} |",
        sampler_cells(4, "detectable"), sampler_cells(64, "detectable")),
    toy(SAMPLERS_IN, SAMPLERS, "| sft-weak (the start of all six) | {}, tool use {} | {}, tool use {} |",
        acc("eval/sft-weak-4"), use("eval/sft-weak-4"), acc("eval/sft-weak-64"),
        use("eval/sft-weak-64")),
    toy(SAMPLERS_IN, SAMPLERS, "a gap under {} points at K = 4 is not excluded.",
        sampler_cells(4, "detectable")),
    toy(SAMPLERS_IN, SAMPLERS, "At K = 4 the two samplers are {} points apart;",
        lambda p: sampler_cells(4, "mean")(p).lstrip("+-")),
    toy(SAMPLERS_IN, SAMPLERS, "At K = 64 the vLLM mean is lower by {} points, all of it one seed "
        "(vLLM seed 2, {}%; its other two {}%)",
        lambda p: sampler_cells(64, "mean")(p).lstrip("+-"),
        lambda _: f"{sampler('vLLM', 'acc_k64')()[2]:.1f}",
        lambda _: f"{sampler('vLLM', 'acc_k64')()[0]:.1f}"),
    toy(SAMPLERS_IN, SAMPLERS, "(a gap found with 80% power: {} points)", sampler_cells(64, "detectable")),
    toy(SAMPLERS_IN, SAMPLERS, "K = 4 gains +{} (hf) and +{} (vLLM) points",
        lambda p: f"{statistics.fmean(sampler('hf', 'acc_k4')()) - 100 * float(acc('eval/sft-weak-4', fixed(4))(p)):.1f}",
        lambda p: f"{statistics.fmean(sampler('vLLM', 'acc_k4')()) - 100 * float(acc('eval/sft-weak-4', fixed(4))(p)):.1f}"),
]  # fmt: skip

CLAIMS += SAMPLER_CLAIMS


# --------------------------------------------------------------------------- builds of the chain

#: the six builds of the quick chain (LOG.md, "Six builds"): build -> its results folder
BUILDS = {"d0-t1": "quick-rebuild/build-1", "d0-t2": "quick-rebuild/build-2threads",
          "d1-t1": "rebuild-spread/d1-t1", "d2-t1": "rebuild-spread/d2-t1",
          "d1-t2": "rebuild-spread/d1-t2", "d2-t2": "rebuild-spread/d2-t2"}  # fmt: skip
SFT_K4, DIRECT, RL30 = (
    "eval/sft-strong-4",
    "eval/sft-strong-4-direct",
    "eval/rl-strong-paragrpo-s0-4",
)


def build_acc(folder: str, ev: str = SFT_K4) -> float:
    """A build's accuracy (in %) from its eval's summary.json."""
    return 100 * read_json(REPO / TOY / folder / ev / "summary.json")["metrics"]["variants"][
        "robust"]["value"]  # fmt: skip


def chain(kind: str) -> dict[str, str]:
    """The six builds' folders: the quick chain's, or the robust chain's (select / average)."""
    return BUILDS if kind == "quick" else {b: f"robust-chain/{kind}/{b}" for b in BUILDS}


def trim(x: float) -> str:
    """One decimal, ``.0`` dropped: ``100.0 → "100"``, ``96.67 → "96.7"``."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def spread_of(kind: str, part: str, ev: str = SFT_K4) -> Getter:
    """A statistic of the six builds' accuracy: min, max, spread, mean or sd (one decimal)."""

    def text(_: Path) -> str:
        v = [build_acc(f, ev) for f in chain(kind).values()]
        stat = {"min": min(v), "max": max(v), "spread": max(v) - min(v),
                "mean": statistics.fmean(v), "sd": statistics.stdev(v)}[part]  # fmt: skip
        return trim(stat) if part in ("min", "max") else f"{stat:.1f}"

    return text


def build(name: str, kind: str = "quick", ev: str = SFT_K4, form=trim) -> Getter:
    return lambda _: form(build_acc(chain(kind)[name], ev))


def pcts(x: float) -> str:
    """A percentage as the toy tables write it: one decimal, bare at 0 and 100."""
    return "100%" if x == 100 else "0%" if x == 0 else f"{x:.1f}%"


def selection(name: str) -> Getter:
    """A --select build's chosen step and its validation accuracy: "120 (93.3%)"."""

    def text(_: Path) -> str:
        chosen = read_json(REPO / TOY / chain("select")[name] / "results.json")["selection"][
            "sft-strong"]  # fmt: skip
        step = chosen["chosen_step"]
        val = next(c["val_accuracy"] for c in chosen["candidates"] if c["step"] == step)
        return f"{step} ({pcts(100 * val)})"

    return text


def build_setting(name: str, key: str) -> Getter:
    """A build's thread count or data seed, from its results.json."""

    def text(_: Path) -> str:
        r = read_json(REPO / TOY / chain("quick")[name] / "results.json")
        return str(r.get("threads") if key == "threads" else r["settings"].get("data_seed", 0))

    return text


CANDIDATES = {90: "robust-chain/d0-t1-candidates/eval-step90", 105: "robust-chain/d0-t1-candidates/eval-step105",
              120: "robust-chain/select/d0-t1/eval/sft-strong-4", 135: "robust-chain/d0-t1-candidates/eval-step135",
              150: "robust-chain/d0-t1-candidates/eval-step150"}  # fmt: skip


def candidates(kind: str) -> Getter:
    """The d0-t1 build's five candidates, on the eval split or on its validation split."""

    def text(_: Path) -> str:
        if kind == "eval":
            v = [build_acc(f, "") for f in CANDIDATES.values()]
        else:
            chosen = read_json(REPO / TOY / "robust-chain/select/d0-t1/results.json")["selection"]
            v = [100 * c["val_accuracy"] for c in chosen["sft-strong"]["candidates"]]
        shown = [f"{x:.1f}" for x in v]
        return ", ".join(shown[:-1]) + (" and " if kind == "eval" else ", ") + shown[-1]

    return text


def quick_vs_average(part: str) -> Getter:
    quick = lambda: [build_acc(f) for f in chain("quick").values()]  # noqa: E731
    average = lambda: [build_acc(f) for f in chain("average").values()]  # noqa: E731
    return gap(quick, average, part)


BUILDS_IN, SPREAD_IN, ROBUST_IN = "Two builds of the quick chain", "Six builds", "A robust chain"
BUILD_CLAIMS = [
    toy(BUILDS_IN, "quick-rebuild", "Both score {} at K = 4 (the same 60 answers), {} with "
        "`--mode direct`, {} on the first 30 after RL",
        acc(f"build-1/{SFT_K4}"), acc(f"build-1/{DIRECT}"), acc(f"build-1/{RL30}")),
    toy(BUILDS_IN, "quick-rebuild", "parts at step 8 (loss gap {}; weights {} apart after 40 steps;",
        lambda p: sci(read_json(p / "threads.json")["max_loss_gap"]),
        lambda p: sci(read_json(p / "threads.json")["max_param_diff_after"])),
    toy(BUILDS_IN, "quick-rebuild", "the chain gives {} again", acc(f"build-2threads/{SFT_K4}")),
    toy(BUILDS_IN, "quick-rebuild", "{} direct, {} on the first 30 after RL: the {}-point",
        acc(f"build-2threads/{DIRECT}"), acc(f"build-2threads/{RL30}"),
        lambda p: f"{build_acc('quick-rebuild/build-2threads') - build_acc('quick-rebuild/build-1'):.1f}"),
    toy(BUILDS_IN, "quick-rebuild", "The {} build (`6c40568`, 2 Dec) and the {} rebuild",
        lambda _: pcts(build_acc("quick-text")), lambda _: pcts(build_acc("quick-rebuild/build-1"))),
    toy(BUILDS_IN, "quick-rebuild", "The two builds took {} and {} min",
        lambda p: f"{read_json(p / 'build-1/results.json')['wall_seconds_this_invocation'] / 60:.1f}",
        lambda p: f"{read_json(p / 'build-2/results.json')['wall_seconds_this_invocation'] / 60:.1f}"),
    toy(BUILDS_IN, "quick-rebuild", "The {} build ran at 2 threads", lambda _: pcts(build_acc("quick-text"))),
    toy(BUILDS_IN, "quick-rebuild", "and {} and {} are two draws.",
        lambda _: pcts(build_acc("quick-text")), lambda _: pcts(build_acc("quick-rebuild/build-1"))),
    # six builds
    *(toy(SPREAD_IN, "", f"| {b} | `{{}}` | {{}} | {{}} | {{}} | {{}} | {{}} |",
          lambda _, b=b: {"d0-t1": "af57372", "d0-t2": "16a55e9"}.get(b, "310cb88"),
          build_setting(b, "threads"), build_setting(b, "data_seed"),
          build(b, form=pcts), build(b, ev=DIRECT, form=pcts), build(b, ev=RL30, form=pcts))
      for b in BUILDS),
    toy(SPREAD_IN, "", "The spread of the SFT accuracy at K = 4 is {} points** ({} to {}; mean {}, "
        "sd {} over the six), after RL {} points ({} to {}).",
        spread_of("quick", "spread"), spread_of("quick", "min"), spread_of("quick", "max"),
        spread_of("quick", "mean"), spread_of("quick", "sd"), spread_of("quick", "spread", RL30),
        lambda p: f"{min(build_acc(f, RL30) for f in BUILDS.values()):.1f}",
        spread_of("quick", "max", RL30)),
    toy(SPREAD_IN, "", "Five of six builds agree within {} to {}%** (mean {})",
        lambda _: f"{sorted(build_acc(f) for f in BUILDS.values())[1]:.1f}",
        spread_of("quick", "max"),
        lambda _: f"{statistics.fmean(sorted(build_acc(f) for f in BUILDS.values())[1:]):.1f}"),
    toy(SPREAD_IN, "", "the one outlier, {} points under the next",
        lambda _: f"{sorted(build_acc(f) for f in BUILDS.values())[1] - build_acc(BUILDS['d0-t1']):.1f}"),
    toy(SPREAD_IN, "", "The 2-RL-step column is 30 questions, so one answer is {} points.",
        lambda _: f"{100 / 30:.1f}"),
    # the robust chain
    *(toy(ROBUST_IN, "", f"| {b} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} |",
          build_setting(b, "threads"), build_setting(b, "data_seed"), build(b, form=pcts),
          selection(b), build(b, "select", form=pcts), build(b, "average", form=pcts),
          build(b, "average", DIRECT, pcts), build(b, "average", RL30, pcts))
      for b in BUILDS),
    toy(ROBUST_IN, "", "Averaged, the six builds agree within {} to {}% (spread {} points; mean {}, "
        "sd {})**", *(spread_of("average", s) for s in ("min", "max", "spread", "mean", "sd"))),
    toy(ROBUST_IN, "", "Against the quick chain's {} to {}% (spread {})",
        *(spread_of("quick", s) for s in ("min", "max", "spread"))),
    toy(ROBUST_IN, "", "The averaged chain's mean over the six builds is {} points above the quick "
        "chain's, a difference neither interval shows (Welch {}, paired {})",
        lambda p: quick_vs_average("mean")(p).lstrip("+"), quick_vs_average("welch"),
        quick_vs_average("paired")),
    toy(ROBUST_IN, "", "and d0-t1's step 90 scores {}% again", build("d0-t1")),
    toy(ROBUST_IN, "", "Selection did not make the chain robust: {} to {}% (spread {} points; mean "
        "{}, sd {}).**", *(spread_of("select", s) for s in ("min", "max", "spread", "mean", "sd"))),
    toy(ROBUST_IN, "", "On the outlier build it chose step 120 ({}%) over step 150 ({}%), tied on the "
        "30 validation questions at {}%.",
        lambda _: f"{build_acc(CANDIDATES[120], ''):.1f}",
        lambda _: f"{build_acc(CANDIDATES[150], ''):.1f}",
        lambda _: f"{100 * read_json(REPO / TOY / 'robust-chain/select/d0-t1/results.json')['selection']['sft-strong']['candidates'][2]['val_accuracy']:.1f}"),
    toy(ROBUST_IN, "", "{}% at steps 90 to 150, validation {}%.", candidates("eval"),
        candidates("val")),
    toy(ROBUST_IN, "", "which 30 validation questions ({} points each) cannot resolve; the mean of "
        "the five scores {}%.", lambda _: f"{100 / 30:.1f}", build("d0-t1", "average")),
    toy(ROBUST_IN, "", "its first number was d0-t1's own ({}%, by hand", build("d0-t1", "average")),
    toy(ROBUST_IN, "", "one answer is {} points, and a 95% binomial interval at {}% is about ±{} "
        "points", lambda _: f"{100 / 60:.1f}", lambda _: "97",
        lambda _: f"{100 * 1.96 * (0.97 * 0.03 / 60) ** 0.5:.0f}"),
]  # fmt: skip

CLAIMS += BUILD_CLAIMS


# --------------------------------------------------------------------------- where it stands

STATUS = "Where it stands"


def two_seed(folder: str, prior: str, recipe: str, key: str = "acc_k4") -> Values:
    return lambda: seeds(folder, [f"{prior}-{recipe}-s{s}" for s in (0, 1)], key)


def constant(folder: str, ev: str, n: int = 2) -> Values:
    """A checkpoint's accuracy (%) repeated for ``n`` seeds: the start every seed shares."""
    return lambda: [build_acc(folder, ev)] * n


STATUS_CLAIMS = [
    toy(STATUS, "quick-text", "{} ({}; `results/quick-text/`, 90 tool-SFT steps)",
        acc(SFT_K4), right(SFT_K4)),
    toy(STATUS, "", "{} at 100 steps, {} at 270", acc(f"quick-text-100/{SFT_K4}"),
        acc(f"quick-text-270/{SFT_K4}")),
    toy(STATUS, "quick-rebuild", "{} ({}), one and the same model", acc(f"build-1/{SFT_K4}"),
        right(f"build-1/{SFT_K4}")),
    toy(STATUS, "quick-rebuild", "{} ({}), one and the same model", acc(f"build-2/{SFT_K4}"),
        right(f"build-2/{SFT_K4}")),
    toy(STATUS, "", "at 1 and 2 threads (6 Dec, `results/rebuild-spread/`): {}, {}, {}, {}%;",
        *(build(b) for b in ("d1-t1", "d2-t1", "d1-t2", "d2-t2"))),
    toy(STATUS, "", "over the six builds {} to {}% (spread {} points)**, five of six within {} to {}%",
        spread_of("quick", "min"), spread_of("quick", "max"), spread_of("quick", "spread"),
        lambda _: f"{sorted(build_acc(f) for f in BUILDS.values())[1]:.1f}", spread_of("quick", "max")),
    toy(STATUS, "", "{} to {}% over the same six builds (spread {} points)**",
        *(spread_of("average", s) for s in ("min", "max", "spread"))),
    toy(STATUS, "", "checkpoint selection on a validation split instead: {} to {}%",
        spread_of("select", "min"), spread_of("select", "max")),
    toy(STATUS, "", "(the `6c40568` code rebuilds the {} model", lambda _: pcts(build_acc(BUILDS["d0-t1"]))),
    toy(STATUS, "", "| same model, `--mode direct` ≤ 40% | {} ({}), build `6c40568`; {} in both 4 Dec "
        "builds | met |", acc(f"quick-text/{DIRECT}"), right(f"quick-text/{DIRECT}"),
        lambda p: acc(f"quick-rebuild/build-1/{DIRECT}")(p)
        if acc(f"quick-rebuild/build-1/{DIRECT}")(p) == acc(f"quick-rebuild/build-2/{DIRECT}")(p)
        else "?"),
    toy(STATUS, "quick-text", "tool use {}, {} calls a question in both builds; without the tool {} "
        "({})", use(SFT_K4), calls(SFT_K4), acc(DIRECT), right(DIRECT)),
    toy(STATUS, "", "{} s ({} min), build `6c40568`, alone on the machine; {} s with 100 tool-SFT steps",
        lambda p: f"{read_json(p / 'quick-text/results.json')['wall_seconds_this_invocation']:.0f}",
        lambda p: f"{read_json(p / 'quick-text/results.json')['wall_seconds_this_invocation'] / 60:.1f}",
        lambda p: f"{read_json(p / 'quick-text-100/results.json')['wall_seconds_this_invocation']:.0f}"),
    toy(STATUS, "rl-weak-text", "{} → {} (seed 0) and {} (seed 1), **+{} points** (paired over the two "
        "seeds {}); vanilla GRPO from the same checkpoint: {} and {} (tool use {}), so PARA-GRPO − "
        "vanilla {} points, but with two seeds neither interval excludes 0 (Welch {}, paired {}).",
        acc("eval/sft-weak-4"), acc("eval/rl-weak-paragrpo-s0-4"), acc("eval/rl-weak-paragrpo-s1-4"),
        lambda p: gap(constant("rl-weak-text", "eval/sft-weak-4"),
                      two_seed("rl-weak-text", "weak", "paragrpo"), "mean")(p).lstrip("+"),
        gap(constant("rl-weak-text", "eval/sft-weak-4"), two_seed("rl-weak-text", "weak", "paragrpo"),
            "paired"),
        acc("eval/rl-weak-vanilla_grpo-s0-4"), acc("eval/rl-weak-vanilla_grpo-s1-4"),
        use("eval/rl-weak-vanilla_grpo-s0-4"),
        *(gap(two_seed("rl-weak-text", "weak", "vanilla_grpo"),
              two_seed("rl-weak-text", "weak", "paragrpo"), p) for p in ("mean", "welch", "paired"))),
    toy(STATUS, "", "The weak prior retrained at `fbba7c8` scored {}, not {}, and PARA-GRPO from it "
        "on the corrected reward {} (seed 0;",
        acc("rl-weak-corrected/eval/sft-weak-4"), acc("rl-weak-text/eval/sft-weak-4"),
        acc("rl-weak-corrected/eval/rl-weak-paragrpo-s0-4")),
    toy(STATUS, SAMPLERS, "K = 4 **{}** with vLLM against **{}** with hf, from {}; K = 64 {} against "
        "{}; vLLM − hf at K = 4 {}, paired {}, Welch {} (a gap found with 80% power: {} points);",
        over_seeds(sampler("vLLM", "acc_k4")), over_seeds(sampler("hf", "acc_k4")),
        acc("eval/sft-weak-4"), over_seeds(sampler("vLLM", "acc_k64")),
        over_seeds(sampler("hf", "acc_k64")), sampler_cells(4, "mean"),
        lambda p: bounds(intervals.paired(sampler("hf", "acc_k4")(), sampler("vLLM", "acc_k4")())),
        sampler_cells(4, "welch"), sampler_cells(4, "detectable")),
    toy(STATUS, SAMPLERS, "and one under {} points at K = 4 is not excluded |", sampler_cells(4, "detectable")),
    toy(STATUS, PARADOX, "K = 4 accuracy PARA-GRPO **{}** against vanilla {}, anchoring only {}, "
        "gating only {}; tool use at K = 4 {}% against {}-{}%; PARA-GRPO minus vanilla {} points, "
        "Welch {}, paired {} (a gap found with 80% power: {} points); tool use at K = 4 minus "
        "vanilla {}, Welch and paired {}",
        over_seeds(arm("paragrpo", "acc_k4")), over_seeds(arm("vanilla_grpo", "acc_k4")),
        mean_of(arm("anchor_only", "acc_k4")), mean_of(arm("gating_only", "acc_k4")),
        mean_of(arm("paragrpo", "tool_use_k4"), fixed(0)),
        lambda _: f"{min(statistics.fmean(arm(r, 'tool_use_k4')()) for r in RECIPES if r != 'paragrpo'):.0f}",
        lambda _: f"{max(statistics.fmean(arm(r, 'tool_use_k4')()) for r in RECIPES if r != 'paragrpo'):.0f}",
        *(gap(arm("vanilla_grpo", "acc_k4"), arm("paragrpo", "acc_k4"), p)
          for p in ("mean", "welch", "paired", "detectable")),
        gap(arm("vanilla_grpo", "tool_use_k4"), arm("paragrpo", "tool_use_k4"), "mean"),
        gap(arm("vanilla_grpo", "tool_use_k4"), arm("paragrpo", "tool_use_k4"), "paired")),
    toy(STATUS, STALE, "K = 4 accuracy **{}** at both k; K = 64 {} against {}; k = 2 − k = 0 at K = 4 "
        "{}, paired {}, Welch {} (a gap found with 80% power: {} points) | run: no cost shown; one "
        "under {} points at K = 4 is not excluded |",
        over_seeds(at_k(0, "acc_k4")), mean_of(at_k(0, "acc_k64")), over_seeds(at_k(2, "acc_k64")),
        *(gap(at_k(0, "acc_k4"), at_k(2, "acc_k4"), p)
          for p in ("mean", "paired", "welch", "detectable", "detectable"))),
    toy(STATUS, "rl-strong-text/eval", "PARA-GRPO {} → {} / {} at K = 4; vanilla keeps calling but "
        "breaks ({} / {}, one constant colour); `anchor_only` {}, `gating_only` {} (one seed each)",
        acc("sft-strong-4"), acc("rl-strong-paragrpo-s0-4"), acc("rl-strong-paragrpo-s1-4"),
        acc("rl-strong-vanilla_grpo-s0-4"), acc("rl-strong-vanilla_grpo-s1-4"),
        acc("rl-strong-anchor_only-s0-4"), acc("rl-strong-gating_only-s0-4")),
    toy(STATUS, "", "| hf and openai backends agree on ≥ 95% at temperature 0 | {} / {} ({}) on the "
        "100-step quick SFT model",
        lambda _: str(read_json(REPO / "benchmarks/results/bench_backend_agreement.json")["same"]),
        lambda _: str(read_json(REPO / "benchmarks/results/bench_backend_agreement.json")["n"]),
        lambda _: pct(read_json(REPO / "benchmarks/results/bench_backend_agreement.json")["agreement"])),
    toy(STATUS, "", "the 90-step 2-thread build it replaced: {} of 20 and {}",
        lambda p: str(sum(r["acc"] == 1.0 for r in read_lines(p / "demo-eval-16a55e9/seeds-1000-1019.jsonl"))),
        right("demo-eval-16a55e9/eval/demo-fp16-4")),
]  # fmt: skip

CLAIMS += STATUS_CLAIMS


# --------------------------------------------------------------------------- quick mode (text)

QUICK_IN = "Quick mode (text answers)"


def wall(folder: str, form: str = "{:.0f}", scale: float = 1) -> Getter:
    """A run's wall seconds from its results.json (this invocation's)."""
    return lambda _: form.format(
        read_json(REPO / TOY / folder / "results.json")["wall_seconds_this_invocation"] / scale
    )


def quick_row(label: str, folder: str, ev: str, colour: bool = True) -> Claim:
    return toy(QUICK_IN, folder, f"| {label} | {{}} | {{}} | {{}} | {{}} | {{}} |",
               fill("{} ({})", acc(ev), right(ev)) if colour else acc(ev),
               acc(ev, variant="paper"), answers(ev, "colour_right") if colour else lambda _: "—",
               use(ev), calls(ev))  # fmt: skip


def rounded(ev: str) -> Getter:
    return acc(ev, lambda x: f"{100 * x:.0f}%")


QUICK_CLAIMS = [
    toy(QUICK_IN, "quick-text", "## Quick mode (text answers): {} at K = 4 with the tool, {} without, in "
        "{} min", rounded(SFT_K4), rounded(DIRECT), wall("quick-text", "{:.1f}", 60)),
    quick_row("SFT (90 tool-SFT steps) | K = 4, tools on (60)", "quick-text", SFT_K4),
    quick_row("SFT | K = 4, `--mode direct` (60)", "quick-text", DIRECT, colour=False),
    quick_row("+ 2 PARA-GRPO steps | K = 4, tools on (first 30)", "quick-text", RL30),
    quick_row("SFT, 100 steps (`results/quick-text-100/`) | K = 4, tools on (60)", "quick-text-100", SFT_K4),
    quick_row("SFT, 100 steps | K = 4, `--mode direct` (60)", "quick-text-100", DIRECT, colour=False),
    toy(QUICK_IN, "quick-text", "Wall time: {} s ({} min), {} s inside the 12-minute budget",
        wall("quick-text"), wall("quick-text", "{:.1f}", 60),
        lambda p: f"{720 - read_json(p / 'results.json')['wall_seconds_this_invocation']:.0f}"),
    toy(QUICK_IN, "", "took {} s ({} min, `results/quick-text-100/`", wall("quick-text-100"),
        wall("quick-text-100", "{:.1f}", 60)),
    toy(QUICK_IN, "quick-text-270", "scored {} at K = 4 (colour named right {}; direct {})",
        acc(SFT_K4), answers(SFT_K4, "colour_right"), acc(DIRECT)),
    toy(QUICK_IN, "quick-text-270/eval", "| K = 4 accuracy (60) | {} (calls broken) | {} | {} | {} |",
        acc("checkpoint-50"), acc("checkpoint-100"), acc("checkpoint-150"), acc("sft-strong-4")),
    toy(QUICK_IN, "quick-text-270/eval", "| colour named right | {} | {} | {} | {} |",
        *(answers(e, "colour_right") for e in ("checkpoint-50", "checkpoint-100", "checkpoint-150",
                                                "sft-strong-4"))),
    toy(QUICK_IN, "quick-text", "Quick mode stops at 90 steps ({} epochs; {} above)",
        lambda p: f"{90 * read_json(p / 'results.json')['settings']['sft_trainer']['per_device_train_batch_size'] / read_json(p / 'results.json')['settings']['task']['train']:.1f}",
        acc(SFT_K4)),
    toy(QUICK_IN, "quick-text-270", "also broke at K = 64, outside the K ∈ {4, 8} it was trained on "
        "({} / 24", lambda p: right("eval/sft-strong-64")(p).split(" / ")[0]),
]  # fmt: skip

CLAIMS += QUICK_CLAIMS


# --------------------------------------------------------------------------- per-step tables

#: the per-step tables' columns: (metrics.jsonl key, form)
REWARDS = (("reward/acc", TWO), ("reward/fmt", TWO), ("reward/anchor", TWO), ("reward/tool", TWO),
           ("tools/kappa", TWO), ("tools/parse_failure_rate", TWO))  # fmt: skip
MEAN_K, KL = ("frames/k_mean", fixed(0)), ("kl", TWO)


def step_rows(within: str, folder: str, runs: dict[str, str], steps: Sequence[int],
              columns: Sequence[tuple[str, Callable[[float], str]]]) -> list[Claim]:  # fmt: skip
    """A per-step table, one claim a row: ``runs`` maps a row label ("" for none) to its
    ``metrics.jsonl`` (under ``folder``)."""
    out = []
    for label, file in runs.items():
        for step in steps:
            cells = " | ".join("{}" for _ in columns)
            head = f"| {label} | {step} |" if label else f"| {step} |"
            out.append(toy(within, folder, f"{head} {cells} |",
                           *(at_step(file, step, key, form) for key, form in columns)))  # fmt: skip
    return out


def eval_row(within: str, folder: str, label: str, name: str, k64_calls: bool = False) -> Claim:
    """A before/after table's row: K = 4 accuracy, tool use, calls / q, then K = 64 accuracy
    and tool use (and calls / q): the evals ``eval/NAME-4`` and ``eval/NAME-64``."""
    parts = [acc(f"eval/{name}-4"), use(f"eval/{name}-4"), calls(f"eval/{name}-4"),
             acc(f"eval/{name}-64"), use(f"eval/{name}-64")]  # fmt: skip
    if k64_calls:
        parts.append(calls(f"eval/{name}-64"))
    return toy(within, folder, f"| {label} |" + " {} |" * len(parts), *parts)


def kappa_range(folder: str, files: Sequence[str], first: int, last: int) -> Getter:
    """The lowest and highest κ over steps first..last of the runs: "0.62–1.0"."""

    def text(p: Path) -> str:
        v = [steps_of(p / f)[s]["tools/kappa"] for f in files for s in range(first, last + 1)]
        return f"{min(v):.2f}–1.0" if max(v) == 1 else f"{min(v):.2f}–{max(v):.2f}"

    return text


WEAK, WEAK_IN = "rl-weak-text", "RL from the weak prior (text answers)"
WEAK_RUNS = {f"{r}-s{s}": f"rl-weak-{r}-s{s}-metrics.jsonl"
             for r in ("paragrpo", "vanilla_grpo") for s in (0, 1)}  # fmt: skip
STEPS_5 = (1, 5, 10, 15, 20, 25, 30)
WEAK_CLAIMS = [
    *step_rows(WEAK_IN, WEAK, WEAK_RUNS, STEPS_5, (*REWARDS, MEAN_K, KL)),
    eval_row(WEAK_IN, WEAK, "sft-weak", "sft-weak"),
    *(eval_row(WEAK_IN, WEAK, f"+ {label}, seed {s}", f"rl-weak-{r}-s{s}")
      for r, label in (("paragrpo", "PARA-GRPO"), ("vanilla_grpo", "vanilla GRPO")) for s in (0, 1)),
    toy(WEAK_IN, WEAK, "Greedy, it never calls: at K = 4 it guesses ({}), at K = 64 it reads the "
        "colour off the overview ({}).", acc("eval/sft-weak-4"), acc("eval/sft-weak-64")),
    toy(WEAK_IN, WEAK, "PARA-GRPO raised K = 4 accuracy by {} and {} points (mean **+{}**, bar +10; "
        "paired over the two seeds {}). The `paper` reading is {}",
        *(lambda p, s=s: f"{100 * (float(acc(f'eval/rl-weak-paragrpo-s{s}-4', fixed(6))(p)) - float(acc('eval/sft-weak-4', fixed(6))(p))):.1f}"
          for s in (0, 1)),
        lambda p: gap(constant(WEAK, "eval/sft-weak-4"), two_seed(WEAK, "weak", "paragrpo"), "mean")(p).lstrip("+"),
        gap(constant(WEAK, "eval/sft-weak-4"), two_seed(WEAK, "weak", "paragrpo"), "paired"),
        lambda p: pct(max(read_json(f / "summary.json")["metrics"]["variants"]["paper"]["value"]
                          for f in sorted((p / "eval").iterdir())))),
    toy(WEAK_IN, WEAK, "Against vanilla GRPO at K = 4 PARA-GRPO is {} points, but with two seeds "
        "neither interval excludes 0 (Welch {}, paired {}); the tool-use gap, {} against {} in "
        "both seeds, is exact.",
        *(gap(two_seed(WEAK, "weak", "vanilla_grpo"), two_seed(WEAK, "weak", "paragrpo"), p)
          for p in ("mean", "welch", "paired")),
        lambda p: pct(statistics.fmean(two_seed(WEAK, "weak", "paragrpo", "tool_use_k4")()) / 100),
        lambda p: pct(statistics.fmean(two_seed(WEAK, "weak", "vanilla_grpo", "tool_use_k4")()) / 100)),
    toy(WEAK_IN, WEAK, "κ goes from {} (seed 0) and {} (seed 1) in the first steps to {} from step 6 "
        "(seed 0) and to {} from step 6 (seed 1)",
        at_step("rl-weak-vanilla_grpo-s0-metrics.jsonl", 1, "tools/kappa"),
        kappa_range(WEAK, ["rl-weak-vanilla_grpo-s1-metrics.jsonl"], 1, 5),
        lambda p: f"{max(steps_of(p / 'rl-weak-vanilla_grpo-s0-metrics.jsonl')[s]['tools/kappa'] for s in range(6, 31)):g}",
        lambda p: kappa_range(WEAK, ["rl-weak-vanilla_grpo-s1-metrics.jsonl"], 6, 30)(p).replace("0.00–", "0–")),
    toy(WEAK_IN, WEAK, "(R_acc {}–{} by step 30)",
        lambda p: f"{min(steps_of(p / f'rl-weak-vanilla_grpo-s{s}-metrics.jsonl')[30]['reward/acc'] for s in (0, 1)):.2f}",
        lambda p: f"{max(steps_of(p / f'rl-weak-vanilla_grpo-s{s}-metrics.jsonl')[30]['reward/acc'] for s in (0, 1)):.2f}"),
    toy(WEAK_IN, WEAK, "never calls at K = 4 either, and guesses ({}, {}).",
        acc("eval/rl-weak-vanilla_grpo-s0-4"), acc("eval/rl-weak-vanilla_grpo-s1-4")),
    toy(WEAK_IN, WEAK, "κ rises from {} / {} at step 1 to {} from step 6 on.",
        at_step("rl-weak-paragrpo-s0-metrics.jsonl", 1, "tools/kappa"),
        at_step("rl-weak-paragrpo-s1-metrics.jsonl", 1, "tools/kappa"),
        kappa_range(WEAK, ["rl-weak-paragrpo-s0-metrics.jsonl", "rl-weak-paragrpo-s1-metrics.jsonl"], 6, 30)),
    toy(WEAK_IN, WEAK, "sweep every time (tool use {}) for the accuracy the checkpoint had ({} and "
        "{}, against its {})", use("eval/rl-weak-paragrpo-s0-64"), acc("eval/rl-weak-paragrpo-s0-64"),
        acc("eval/rl-weak-paragrpo-s1-64"), acc("eval/sft-weak-64")),
    toy(WEAK_IN, WEAK, "(parse failures {} / {} at step 1, R_fmt {} / {}).",
        at_step("rl-weak-vanilla_grpo-s0-metrics.jsonl", 1, "tools/parse_failure_rate"),
        at_step("rl-weak-vanilla_grpo-s1-metrics.jsonl", 1, "tools/parse_failure_rate"),
        at_step("rl-weak-vanilla_grpo-s0-metrics.jsonl", 1, "reward/fmt"),
        at_step("rl-weak-vanilla_grpo-s1-metrics.jsonl", 1, "reward/fmt")),
    toy(WEAK_IN, WEAK, "(18 tokens; R_fmt {}, since no think)",
        at_step("rl-weak-vanilla_grpo-s0-metrics.jsonl", 30, "reward/fmt", lambda x: f"{x:g}")),
]  # fmt: skip

CLAIMS += WEAK_CLAIMS


STRONG, STRONG_IN = "rl-strong-text", "RL from the strong prior (text answers)"
STRONG_RUNS = {
    **{f"{r}-s{s}": f"rl-strong-{r}-s{s}-metrics.jsonl"
       for r in ("paragrpo", "vanilla_grpo") for s in (0, 1)},
    **{f"{r}-s0": f"rl-strong-{r}-s0-metrics.jsonl" for r in ("anchor_only", "gating_only")},
}  # fmt: skip


def strong_file(run: str) -> str:
    return f"rl-strong-{run}-metrics.jsonl"


def step_range(folder: str, runs: Sequence[str], key: str, first: int, last: int,
               one: str = "1.0") -> Getter:  # fmt: skip
    """The lowest and highest of a per-step number over steps first..last of the runs."""

    def text(p: Path) -> str:
        v = [steps_of(p / strong_file(r) if folder == STRONG else p / r)[s][key]
             for r in runs for s in range(first, last + 1)]  # fmt: skip
        hi = one if max(v) == 1 else f"{max(v):.2f}"
        return f"{min(v):.2f}–{hi}"

    return text


def peak_gib(config: str) -> Getter:
    """The peak resident size (GiB) of one run's samples in rss-samples-kb.txt."""

    def text(p: Path) -> str:
        rows = (line.split() for line in raw_text(p / "rss-samples-kb.txt").splitlines())
        return f"{max(int(kb) for _, c, kb in rows if c == config) / 1024**2:.1f}"

    return text


def raw_text(path: Path) -> str:
    return raw(path).read_text()


STRONG_CLAIMS = [
    *step_rows(STRONG_IN, STRONG, STRONG_RUNS, STEPS_5, (*REWARDS, MEAN_K, KL)),
    eval_row(STRONG_IN, STRONG, "sft-strong", "sft-strong", k64_calls=True),
    *(eval_row(STRONG_IN, STRONG, f"+ {label}, seed {s}", f"rl-strong-{r}-s{s}", k64_calls=True)
      for r, label, ss in (("paragrpo", "PARA-GRPO", (0, 1)), ("vanilla_grpo", "vanilla GRPO", (0, 1)),
                           ("anchor_only", "`anchor_only`", (0,)), ("gating_only", "`gating_only`", (0,)))
      for s in ss),
    toy(STRONG_IN, STRONG, "already calls at every K: K = 4 {}, K = 64 {}, {} calls a question.",
        acc("eval/sft-strong-4"), acc("eval/sft-strong-64"),
        lambda p: calls("eval/sft-strong-4")(p).removesuffix(".0")),
    toy(STRONG_IN, STRONG, "+{} points at K = 4 in both seeds ({} → {}, one question of 60)",
        lambda p: f"{build_acc(f'{STRONG}/eval/rl-strong-paragrpo-s0-4', '') - build_acc(f'{STRONG}/eval/sft-strong-4', ''):.1f}",
        acc("eval/sft-strong-4"), acc("eval/rl-strong-paragrpo-s1-4")),
    toy(STRONG_IN, "", "(the weak prior, +{}); from {} there are {} points to gain.",
        lambda p: gap(constant(WEAK, "eval/sft-weak-4"), two_seed(WEAK, "weak", "paragrpo"), "mean")(p).lstrip("+"),
        acc(f"{STRONG}/eval/sft-strong-4"),
        lambda _: f"{100 - build_acc(f'{STRONG}/eval/sft-strong-4', ''):.1f}"),
    toy(STRONG_IN, STRONG, "κ stays at {} for all 30 steps of both seeds",
        step_range(STRONG, ["vanilla_grpo-s0", "vanilla_grpo-s1"], "tools/kappa", 1, 30)),
    toy(STRONG_IN, STRONG, "K = 4: {} → {} / {} (mean **−{} points**); K = 64: {} → {} / {}. Seed 1's "
        "KL spiked to {} at step 20.",
        acc("eval/sft-strong-4"), acc("eval/rl-strong-vanilla_grpo-s0-4"),
        acc("eval/rl-strong-vanilla_grpo-s1-4"),
        lambda p: gap(constant(STRONG, "eval/sft-strong-4"), two_seed(STRONG, "strong", "vanilla_grpo"), "mean")(p).lstrip("-"),
        acc("eval/sft-strong-64"), acc("eval/rl-strong-vanilla_grpo-s0-64"),
        acc("eval/rl-strong-vanilla_grpo-s1-64"),
        at_step(strong_file("vanilla_grpo-s1"), 20, "kl", ONE)),
    toy(STRONG_IN, STRONG, "the fall's paired interval over them is {}, and vanilla against "
        "PARA-GRPO at K = 4 ({} points) has Welch {} and paired {}; both hold 0.",
        gap(constant(STRONG, "eval/sft-strong-4"), two_seed(STRONG, "strong", "vanilla_grpo"), "paired"),
        *(gap(two_seed(STRONG, "strong", "paragrpo"), two_seed(STRONG, "strong", "vanilla_grpo"), p)
          for p in ("mean", "welch", "paired"))),
    toy(STRONG_IN, STRONG, "keeps everything: {} / {}, κ {}.", acc("eval/rl-strong-anchor_only-s0-4"),
        acc("eval/rl-strong-anchor_only-s0-64"),
        step_range(STRONG, ["anchor_only-s0"], "tools/kappa", 1, 30)),
    toy(STRONG_IN, STRONG, "falls as vanilla does: {} / {}, parse failures {} from step 5.",
        acc("eval/rl-strong-gating_only-s0-4"), acc("eval/rl-strong-gating_only-s0-64"),
        step_range(STRONG, ["gating_only-s0"], "tools/parse_failure_rate", 5, 30)),
    toy(STRONG_IN, STRONG, "at step 1, R_acc is {} / {} (vanilla, seeds 0 / 1) and {} (`gating_only`), "
        "R_fmt {}, against R_acc {} / {} and R_fmt {} for PARA-GRPO.",
        at_step(strong_file("vanilla_grpo-s0"), 1, "reward/acc"),
        at_step(strong_file("vanilla_grpo-s1"), 1, "reward/acc"),
        at_step(strong_file("gating_only-s0"), 1, "reward/acc"),
        step_range(STRONG, ["vanilla_grpo-s0", "vanilla_grpo-s1", "gating_only-s0"], "reward/fmt", 1, 1),
        at_step(strong_file("paragrpo-s0"), 1, "reward/acc"),
        at_step(strong_file("paragrpo-s1"), 1, "reward/acc"),
        lambda p: f"{min(steps_of(p / strong_file(f'paragrpo-s{s}'))[1]['reward/fmt'] for s in (0, 1)):.2f}"),
    toy(STRONG_IN, STRONG, "resident size, sampled every 20 s: {} / {} GB (PARA-GRPO), {} GB "
        "(`anchor_only`), {} / {} GB (vanilla), {} GB (`gating_only`)",
        *(peak_gib(f"rl-strong-{r}.yaml") for r in ("paragrpo-s0", "paragrpo-s1", "anchor_only-s0",
                                                    "vanilla_grpo-s0", "vanilla_grpo-s1", "gating_only-s0"))),
]  # fmt: skip

CLAIMS += STRONG_CLAIMS


# --------------------------------------------------------------------------- vLLM, 2 Dec

VLLM2, CORR = "rl-weak-vllm", "rl-weak-corrected"
VLLM2_IN = "RL with vLLM as the sampler (2 Dec 2026, night)"
#: the 2 Dec sampler runs: (label, folder, run)
VLLM2_RUNS = {"hf0": (CORR, "weak-paragrpo-s0"), "hf1": (VLLM2, "weak-paragrpo-s1"),
              "vllm0": (VLLM2, "weak-paragrpo-vllm-s0"), "vllm1": (VLLM2, "weak-paragrpo-vllm-s1"),
              "nocorr": (VLLM2, "weak-paragrpo-vllm-nocorr-s0")}  # fmt: skip


def v2(name: str, key: str) -> float:
    folder, run = VLLM2_RUNS[name]
    return numbers(folder, run)[key]


def v2_arm(sampler: str, key: str) -> Values:
    return lambda: [v2(f"{sampler}{s}", key) for s in (0, 1)]


def v2_steps(key: str, names: Sequence[str] = ("vllm0", "vllm1")) -> list[float]:
    return [r[key] for n in names for r in run_steps(*VLLM2_RUNS[n][:1], VLLM2_RUNS[n][1])
            if r.get(key) is not None]  # fmt: skip


def v2_eval(name: str, k: int) -> str:
    folder, run = VLLM2_RUNS[name]
    return f"{folder}/eval/rl-{run}-{k}"


def v2_row(label: str, name: str) -> Claim:
    return toy(VLLM2_IN, "", f"| {label} | {{}} | {{}} | {{}} | {{}} | {{}} |",
               acc(v2_eval(name, 4)), use(v2_eval(name, 4)), calls(v2_eval(name, 4)),
               acc(v2_eval(name, 64)), use(v2_eval(name, 64)))  # fmt: skip


def kappa_mean(name: str, last: bool) -> Getter:
    def text(_: Path) -> str:
        rows = run_steps(VLLM2_RUNS[name][0], VLLM2_RUNS[name][1])
        return (
            f"{statistics.fmean(r['tools/kappa'] for r in (rows[-5:] if last else rows[:5])):.2f}"
        )

    return text


def v2_range(key: str, form: str = "{:.4f}") -> Getter:
    return lambda _: form.format(min(v2_steps(key))) + "–" + form.format(max(v2_steps(key)))


VLLM2_CLAIMS = [
    toy(VLLM2_IN, CORR, "| sft-weak (the start of every run) | {} | {} | {} | {} | {} |",
        acc("eval/sft-weak-4"), use("eval/sft-weak-4"), calls("eval/sft-weak-4"),
        acc("eval/sft-weak-64"), use("eval/sft-weak-64")),
    v2_row("+ PARA-GRPO, hf sampler, seed 0 (section below)", "hf0"),
    v2_row("+ PARA-GRPO, hf sampler, seed 1", "hf1"),
    v2_row("+ PARA-GRPO, vLLM sampler, seed 0", "vllm0"),
    v2_row("+ PARA-GRPO, vLLM sampler, seed 1", "vllm1"),
    *step_rows(VLLM2_IN, VLLM2, {"": "rl-weak-paragrpo-vllm-s0-metrics.jsonl"}, (1, 5, 10, 20, 30),
               (*REWARDS, KL, ("sampling/sampling_logp_difference/mean", fixed(4)),
                ("sampling/importance_sampling_ratio/min", fixed(3)),
                ("sampling/importance_sampling_ratio/max", fixed(3)))),
    toy(VLLM2_IN, "", "K = 4 accuracy went from {} to {} and {} (mean +{} points), and tool use from "
        "{} to {}–{}%. The hf sampler, same checkpoint and reward: {} and {} (+{}).",
        acc(f"{CORR}/eval/sft-weak-4"), acc(v2_eval("vllm0", 4)), acc(v2_eval("vllm1", 4)),
        lambda _: f"{statistics.fmean(v2_arm('vllm', 'acc_k4')()) - build_acc(CORR, 'eval/sft-weak-4'):.1f}",
        use(f"{CORR}/eval/sft-weak-4"),
        lambda _: f"{min(v2_arm('vllm', 'tool_use_k4')()):.0f}",
        lambda _: f"{max(v2_arm('vllm', 'tool_use_k4')()):.0f}",
        acc(v2_eval("hf0", 4)), acc(v2_eval("hf1", 4)),
        lambda _: f"{statistics.fmean(v2_arm('hf', 'acc_k4')()) - build_acc(CORR, 'eval/sft-weak-4'):.1f}"),
    toy(VLLM2_IN, "", "mean κ of the first five steps {} vLLM / {} hf, of the last five {} / {}).",
        kappa_mean("vllm0", False), kappa_mean("hf0", False), kappa_mean("vllm0", True),
        kappa_mean("hf0", True)),
    toy(VLLM2_IN, "", "was {} (mean {}); the per-token importance ratio's mean was within {} at every "
        "step, its minimum {} and maximum {}.",
        v2_range("sampling/sampling_logp_difference/mean"),
        lambda _: f"{statistics.fmean(v2_steps('sampling/sampling_logp_difference/mean')):.4f}",
        lambda _: "–".join(f"{f(v2_steps('sampling/importance_sampling_ratio/mean')):.4f}"
                           for f in (min, max)),
        v2_range("sampling/importance_sampling_ratio/min", "{:.2f}"),
        v2_range("sampling/importance_sampling_ratio/max", "{:.2f}")),
    toy(VLLM2_IN, "", "(KL to the reference at most {} over steps 1–5, {} over steps 26–30), while the "
        "sampler stayed within {} of it",
        lambda _: f"{max(r['kl'] for n in ('vllm0', 'vllm1') for r in run_steps(VLLM2, VLLM2_RUNS[n][1])[:5]):.3f}",
        lambda _: f"{statistics.fmean(v2_arm('vllm', 'kl_last5')()):.2f}",
        lambda _: f"{statistics.fmean(v2_steps('sampling/sampling_logp_difference/mean')):.4f}"),
    toy(VLLM2_IN, "", "At K = 4 the vLLM runs ended {} points lower on average ({} against {}), at "
        "K = 64 {} points lower ({} against {}), and vLLM seed 1 fell at K = 64 below its own "
        "start ({} against {},",
        lambda _: gap(v2_arm("vllm", "acc_k4"), v2_arm("hf", "acc_k4"), "mean")(_).lstrip("+"),
        lambda _: pcts(statistics.fmean(v2_arm("vllm", "acc_k4")())),
        lambda _: pcts(statistics.fmean(v2_arm("hf", "acc_k4")())),
        lambda _: gap(v2_arm("vllm", "acc_k64"), v2_arm("hf", "acc_k64"), "mean")(_).lstrip("+"),
        lambda _: pcts(statistics.fmean(v2_arm("vllm", "acc_k64")())),
        lambda _: pcts(statistics.fmean(v2_arm("hf", "acc_k64")())),
        acc(v2_eval("vllm1", 64)), acc(f"{CORR}/eval/sft-weak-64")),
    toy(VLLM2_IN, "", "(vLLM − hf at K = 4: Welch {}, paired {}; both hold 0)",
        gap(v2_arm("hf", "acc_k4"), v2_arm("vllm", "acc_k4"), "welch"),
        gap(v2_arm("hf", "acc_k4"), v2_arm("vllm", "acc_k4"), "paired")),
    toy(VLLM2_IN, "", "(the hf seeds agree with each other to {} and {} points, the vLLM seeds differ "
        "by {} and {})",
        *(lambda _, s=s, k=k: f"{abs(v2(f'{s}0', k) - v2(f'{s}1', k)):.{0 if s == 'hf' and k == 'acc_k4' else 1}f}"
          for s in ("hf", "vllm") for k in ("acc_k4", "acc_k64"))),
    toy(VLLM2_IN, "", "({} and {} over the last five steps, against {} and {}: +{}, Welch {}, but "
        "paired {}, so not shown)",
        lambda _: f"{v2('vllm0', 'kl_last5'):.3f}", lambda _: f"{v2('vllm1', 'kl_last5'):.3f}",
        lambda _: f"{v2('hf0', 'kl_last5'):.3f}", lambda _: f"{v2('hf1', 'kl_last5'):.3f}",
        lambda _: gap(v2_arm("hf", "kl_last5"), v2_arm("vllm", "kl_last5"), "mean", 3)(_).lstrip("+"),
        gap(v2_arm("hf", "kl_last5"), v2_arm("vllm", "kl_last5"), "welch", 3),
        gap(v2_arm("hf", "kl_last5"), v2_arm("vllm", "kl_last5"), "paired", 3)),
    toy(VLLM2_IN, "", "near 1, reach {} per token", lambda _: (
        f"{min(v2_steps('sampling/importance_sampling_ratio/min')):.2f}–"
        f"{max(v2_steps('sampling/importance_sampling_ratio/max')):.2f}")),
    toy(VLLM2_IN, "", "gave {} at K = 4 (tool use {}) and {} at K = 64, against {} / {} with it; its KL "
        "over the last five steps was {}, the hf runs' level. So, on one seed each (no interval), "
        "the run with the correction had {} times the KL",
        acc(v2_eval("nocorr", 4)), use(v2_eval("nocorr", 4)), acc(v2_eval("nocorr", 64)),
        acc(v2_eval("vllm0", 4)), acc(v2_eval("vllm0", 64)),
        lambda _: f"{v2('nocorr', 'kl_last5'):.3f}",
        lambda _: f"{v2('vllm0', 'kl_last5') / v2('nocorr', 'kl_last5'):.1f}"),
]  # fmt: skip

CLAIMS += VLLM2_CLAIMS


# --------------------------------------------------------------------------- corrected reward

CORR_IN = "RL from the weak prior on the corrected reward"


def gain(folder: str, start: str, end: str) -> Getter:
    """The accuracy an RL run added to its start, in points: "+68.3"."""
    return lambda _: f"{build_acc(folder, end) - build_acc(folder, start):+.1f}"


CORR_CLAIMS = [
    toy(CORR_IN, CORR, "| sft-weak (retrained) | {} | {} | {} | {} | {} |", acc("eval/sft-weak-4"),
        use("eval/sft-weak-4"), calls("eval/sft-weak-4"), acc("eval/sft-weak-64"),
        use("eval/sft-weak-64")),
    eval_row(CORR_IN, CORR, "+ PARA-GRPO, seed 0, corrected reward", "rl-weak-paragrpo-s0"),
    toy(CORR_IN, WEAK, "| (old reward, below: sft-weak → PARA-GRPO s0) | {} → {} | {} → {} | {} → {} "
        "| {} → {} | {} → {} |",
        *(f(f"eval/{m}-{k}") for f, k in ((acc, 4), (use, 4), (calls, 4), (acc, 64), (use, 64))
          for m in ("sft-weak", "rl-weak-paragrpo-s0"))),
    *step_rows(CORR_IN, CORR, {"": "rl-weak-paragrpo-s0-metrics.jsonl"}, (1, 5, 10, 20, 30),
               (*REWARDS, KL)),
    toy(CORR_IN, "", "The direction holds: {} points at K = 4 (old reward, seed 0: {}).",
        gain(CORR, "eval/sft-weak-4", "eval/rl-weak-paragrpo-s0-4"),
        gain(WEAK, "eval/sft-weak-4", "eval/rl-weak-paragrpo-s0-4")),
    toy(CORR_IN, "", "The end point is {} points lower at K = 4 ({} vs {}) and {} points higher at "
        "K = 64.",
        lambda _: f"{build_acc(WEAK, 'eval/rl-weak-paragrpo-s0-4') - build_acc(CORR, 'eval/rl-weak-paragrpo-s0-4'):.1f}",
        acc(f"{CORR}/eval/rl-weak-paragrpo-s0-4"), acc(f"{WEAK}/eval/rl-weak-paragrpo-s0-4"),
        lambda _: f"{build_acc(CORR, 'eval/rl-weak-paragrpo-s0-64') - build_acc(WEAK, 'eval/rl-weak-paragrpo-s0-64'):.1f}"),
    toy(CORR_IN, WEAK, "within what two seeds differed by before ({} / {})",
        acc("eval/rl-weak-paragrpo-s0-4"), acc("eval/rl-weak-paragrpo-s1-4")),
    toy(CORR_IN, "", "Step 1 had R_tool {} at κ {}, against {} at κ {} under the old reward.",
        *(at_step(f"{f}/rl-weak-paragrpo-s0-metrics.jsonl", 1, k)
          for f in (CORR, WEAK) for k in ("reward/tool", "tools/kappa"))),
    toy(CORR_IN, VLLM2, "{} at K = 4 (tool use {}) and {} at K = 64, so the two seeds agree ({} "
        "points each).", acc("eval/rl-weak-paragrpo-s1-4"), use("eval/rl-weak-paragrpo-s1-4"),
        acc("eval/rl-weak-paragrpo-s1-64"),
        lambda _: gain(CORR, "eval/sft-weak-4", "eval/rl-weak-paragrpo-s0-4")(_)
        if gain(CORR, "eval/sft-weak-4", "eval/rl-weak-paragrpo-s0-4")(_)
        == f"{v2('hf1', 'acc_k4') - build_acc(CORR, 'eval/sft-weak-4'):+.1f}" else "?"),
]  # fmt: skip

CLAIMS += CORR_CLAIMS


# --------------------------------------------------------------------------- letter answers (1 Dec)

STOOD_IN, LQUICK_IN, LETTER_IN = ("Where it stood (1 Dec 2026, night)",
                                  "Quick mode: the model sees and uses the tool",
                                  "The letter: a lookup the model learns alone")  # fmt: skip
RESTATED, DRILL = "quick-restated", "lookup-drill"


def drill_at(file: str, step: int, form: str = "{:.0f}%") -> Getter:
    """A drill's letter accuracy at a step (its drill.json's curve, or a curve.jsonl)."""

    def text(p: Path) -> str:
        path = p / file
        curve = read_lines(path) if path.suffix == ".jsonl" else read_json(path)["curve"]
        return form.format(100 * next(c["letter_acc"] for c in curve if c["step"] == step))

    return text


def curve_range(file: str, first: int, key: str = "letter_acc", scale: float = 100,
                form: str = "{:.0f}") -> Getter:  # fmt: skip
    """The lowest and highest of a drill curve's number from step ``first`` on: "96–100"."""

    def text(p: Path) -> str:
        v = [scale * c[key] for c in read_json(p / file)["curve"] if c["step"] >= first]
        return f"{form.format(min(v))}–{form.format(max(v))}"

    return text


LETTER_CLAIMS = [
    toy(STOOD_IN, "", "| **{}** ({}); with a lookup drill rehearsed in every SFT stage, {} | not met |",
        acc(f"{RESTATED}/{SFT_K4}"), right(f"{RESTATED}/{SFT_K4}"), acc(f"{DRILL}/rehearsal/eval-4")),
    toy(STOOD_IN, RESTATED, "| same model, `--mode direct` ≤ 40% | {} ({}) | met |", acc(DIRECT),
        right(DIRECT)),
    toy(STOOD_IN, RESTATED, "| the tool is necessary and used | {} tool use, {} calls a question, colour "
        "named right {} | met |", use(SFT_K4), calls(SFT_K4), answers(SFT_K4, "colour_right")),
    toy(STOOD_IN, "", "seed 0: {} → {} (tool use 0 → {});",
        acc("rl-lenient-reader/eval/sft-weak-4"), acc("rl-weak/eval/rl-weak-paragrpo-s0-4"),
        use("rl-weak/eval/rl-weak-paragrpo-s0-4", lambda x: f"{100 * x:.0f}%")),
    toy(STOOD_IN, "", "drilling after the SFT forgets the protocol (K = 4: {})",
        acc(f"{DRILL}/drill-after-sft/eval-4")),
    toy(STOOD_IN, "", "taught the model to call the tool (κ 0 → {} at K = 4) and, under the answer "
        "reader as it was, raised K = 4 accuracy from {} to {}.",
        use("rl-weak/eval/rl-weak-paragrpo-s0-4", lambda x: f"{100 * x:.0f}%"),
        acc("rl-lenient-reader/eval/sft-weak-4"), acc("rl-lenient-reader/eval/rl-weak-paragrpo-s0-4")),
    toy(STOOD_IN, "", "The `paper` reading of the same answers gives {}, and the fixed reader {}.",
        acc("rl-lenient-reader/eval/rl-weak-paragrpo-s0-4", variant="paper"),
        lambda p: pct(read_json(p / "rl-lenient-reader/eval/rl-weak-paragrpo-s0-4/answers.json")[
            "correct_now"] / 60)),
    toy(STOOD_IN, "rl-weak/eval", "(tool use at K = 4: 0 → {}; at K = 64: {}), and accuracy did not "
        "rise ({} → {})", use("rl-weak-paragrpo-s0-4", lambda x: f"{100 * x:.0f}%"),
        use("rl-weak-paragrpo-s0-64", lambda x: f"{100 * x:.0f}%"),
        lambda p: acc("rl-lenient-reader/eval/sft-weak-4")(p.parents[1]),
        acc("rl-weak-paragrpo-s0-4")),
    # quick mode with letters
    toy(LQUICK_IN, RESTATED, "| SFT | K = 4, tools on (60) | {} | {} | {} | {} | {} | {} |", acc(SFT_K4),
        answers(SFT_K4, "colour_right"), answers(SFT_K4, "options_copied"),
        answers(SFT_K4, "lookup_consistent"), use(SFT_K4), calls(SFT_K4)),
    toy(LQUICK_IN, RESTATED, "| SFT | K = 4, `--mode direct` (60) | {} | — | — | — | {} | {} |",
        acc(DIRECT), use(DIRECT), calls(DIRECT)),
    toy(LQUICK_IN, RESTATED, "| SFT | K = 64, tools on (24) | {} | 19 / 24 | — | — | {} | {} |",
        acc("eval/sft-strong-64"), use("eval/sft-strong-64"), calls("eval/sft-strong-64")),
    toy(LQUICK_IN, RESTATED, "| + 2 PARA-GRPO steps | K = 4, tools on (60) | {} | | | | {} | {} |",
        acc(RL30), use(RL30), calls(RL30)),
    toy(LQUICK_IN, RESTATED, "Without the tool (`--mode direct`) it scores {}:", acc(DIRECT)),
    toy(LQUICK_IN, "restated-chars", "the same pipeline scored {} ({}; `results/restated-chars/`)",
        acc(SFT_K4), right(SFT_K4)),
    # the letter
    *(toy(LETTER_IN, DRILL, f"| {label} | {{}} | {{}} | {{}} |{tail}",
          answers(ev, "colour_right"), answers(ev, "options_copied"), answers(ev, "lookup_consistent"),
          *((answers(ev, "correct"),) if "{}" in tail else ()))
      for label, ev, tail in (
          ("after warm-up `still` (400 steps)", "still-eval-warmup-still", " |"),
          ("after warm-up `glimpse` (+150 steps)", "still-eval-warmup-glimpse", " |"),
          ("`still` with the key form below (400 steps)", "still-eval-q4-still", " |"),
          ("drill (letters-only loss), then `still` (`drill-then-still/letters-loss/`)",
           "drill-then-still/letters-loss", " {} |"),
          ("drill (all-token loss), then `still` (`drill-then-still/all-loss/`; `run --quick --drill`)",
           "drill-then-still/all-loss", " {} |"),
          ("the same, colour not named before the list (oracle change, reverted; `…/all-loss-colour-not-named/`)",
           "drill-then-still/all-loss-colour-not-named", " {} |"),
          ("drill, then an `episode`-form drill (150 steps), then `still`, both without the colour's first mention (`…/episode-form/`)",
           "drill-then-still/episode-form", " {} |"),
          ("drill, then `still` with the drill rehearsed each step (`rehearsal/`)",
           "rehearsal/still-eval", " {} |"))),
    toy(LETTER_IN, DRILL, "with the loss on the letters only, {} at step 300, {} at 500, {} at 600, {} "
        "at 650", *(drill_at("drill-then-still/letters-loss/drill.json", s) for s in (300, 500, 600, 650))),
    toy(LETTER_IN, DRILL, "just as it left chance: {} in `curve.jsonl`); with the loss on every token, "
        "{} at 400, {} at 500, {} at 700, **{} at 750–800**",
        drill_at("curve.jsonl", 250, "{:.1f}%"),
        *(drill_at("drill-then-still/all-loss/drill.json", s) for s in (400, 500, 700, 750))),
    toy(LETTER_IN, DRILL, "(33% at step 500; `oracle-form/curve-lr1e-3-to-step500.jsonl`)".replace("33%", "{}"),
        drill_at("oracle-form/curve-lr1e-3-to-step500.jsonl", 500)),
    toy(LETTER_IN, DRILL, "at chance to step ~125, {} at 225, {} at 325, ≥ {} from 350",
        drill_at("drill-after-sft/drill.json", 225), drill_at("drill-after-sft/drill.json", 325),
        lambda p: f"{100 * min(c['letter_acc'] for c in read_json(p / 'drill-after-sft/drill.json')['curve'] if c['step'] >= 350):.1f}%"),
    toy(LETTER_IN, DRILL, "(`drill-after-sft/eval-4/`): **{}**, tool use {};",
        acc("drill-after-sft/eval-4"), use("drill-after-sft/eval-4")),
    toy(LETTER_IN, DRILL, "The drill's own text stays at {}% from step 75 and the episode loss falls as "
        "without it ({} from step 225).",
        curve_range("rehearsal/still-rehearse.json", 75),
        curve_range("rehearsal/still-rehearse.json", 225, "sft_loss", 1, "{:.2f}")),
    toy(LETTER_IN, DRILL, "the drill's text at {}% at every checkpoint",
        lambda p: "–".join(f"{100 * f(c['letter_acc'] for n in ('glimpse', 'sft') for c in read_json(p / f'rehearsal/{n}-rehearse.json')['curve']):.0f}"
                           for f in (min, max))),
    toy(LETTER_IN, DRILL, "| quick SFT (`results/quick-restated/`) | {} | {} | {} | {} | {} |",
        lambda p: acc(SFT_K4)(p.parent / RESTATED),
        *(lambda p, c=c: answers(SFT_K4, c)(p.parent / RESTATED)
          for c in ("colour_right", "options_copied", "lookup_consistent")),
        lambda p: use(SFT_K4)(p.parent / RESTATED)),
    toy(LETTER_IN, DRILL, "| the same chain, the drill rehearsed in every stage | {} | {} | {} | {} | {} |",
        acc("rehearsal/eval-4"), answers("rehearsal/eval-4", "colour_right"),
        answers("rehearsal/eval-4", "options_copied"), answers("rehearsal/eval-4", "lookup_consistent"),
        use("rehearsal/eval-4")),
    toy(LETTER_IN, DRILL, "| the same, `--mode direct` | {} | — | — | — | {} |",
        acc("rehearsal/eval-4-direct", pct1), use("rehearsal/eval-4-direct")),
]  # fmt: skip

CLAIMS += LETTER_CLAIMS


LENIENT_IN, FIXED_IN, LR_IN = ("Under the reader as it was", "With the fixed reader",
                               "At lr 1e-4")  # fmt: skip
LETTER_RL_IN = "RL from the weak prior: the tool is learned; under a lenient reader"
LENIENT, FIXED = "rl-lenient-reader", "rl-weak"
STEPS_6 = (1, 7, 13, 19, 25, 30)


def now(ev: str) -> Getter:
    """The share answers.py's current rules read right (``correct_now``), one decimal."""

    def text(p: Path) -> str:
        a = read_json(p / ev / "answers.json")
        return pct1(a["correct_now"] / a["n"])

    return text


def whole(ev: str) -> Getter:
    return use(ev, lambda x: f"{100 * x:.0f}%")


LETTER_RL_CLAIMS = [
    toy(LETTER_RL_IN, LENIENT, "at K = 4 it guesses ({}, the chance level", acc("eval/sft-weak-4")),
    toy(LETTER_RL_IN, LENIENT, "and matches the letter 10 times ({}).", acc("eval/sft-weak-64")),
    *step_rows(LENIENT_IN, LENIENT, {"": "rl-weak-paragrpo-s0-metrics.jsonl"}, STEPS_6,
               (*REWARDS, MEAN_K, KL)),
    *(toy(LENIENT_IN, LENIENT, f"| {label} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} | {{}} |",
          acc(f"eval/{m}-4"), acc(f"eval/{m}-4", variant="paper"),
          now(f"eval/{m}-4") if m != "sft-weak" else acc(f"eval/{m}-4"),
          whole(f"eval/{m}-4"), acc(f"eval/{m}-64"), acc(f"eval/{m}-64", variant="paper"),
          now(f"eval/{m}-64") if m != "sft-weak" else acc(f"eval/{m}-64"), use(f"eval/{m}-64"))
      for label, m in (("sft-weak", "sft-weak"), ("+ PARA-GRPO, seed 0", "rl-weak-paragrpo-s0"))),
    *step_rows(FIXED_IN, FIXED, {"": "rl-weak-paragrpo-s0-metrics.jsonl"}, STEPS_6,
               (*REWARDS, MEAN_K, KL)),
    toy(FIXED_IN, "", "| sft-weak | {} | {} | {} | — | {} | {} |",
        acc(f"{LENIENT}/eval/sft-weak-4"), acc(f"{LENIENT}/eval/sft-weak-4", variant="paper"),
        use(f"{LENIENT}/eval/sft-weak-4"), acc(f"{LENIENT}/eval/sft-weak-64"),
        use(f"{LENIENT}/eval/sft-weak-64")),
    toy(FIXED_IN, FIXED, "| + PARA-GRPO, seed 0 | {} | {} | {} | {} | {} | {} |",
        acc("eval/rl-weak-paragrpo-s0-4"), acc("eval/rl-weak-paragrpo-s0-4", variant="paper"),
        whole("eval/rl-weak-paragrpo-s0-4"), answers("eval/rl-weak-paragrpo-s0-4", "colour_right"),
        acc("eval/rl-weak-paragrpo-s0-64"), whole("eval/rl-weak-paragrpo-s0-64")),
    toy(FIXED_IN, "", "seed 0 moved K = 4 accuracy by {} points",
        lambda _: f"{build_acc(FIXED, 'eval/rl-weak-paragrpo-s0-4') - build_acc(LENIENT, 'eval/sft-weak-4'):.1f}".replace("-", "−")),
    toy(FIXED_IN, FIXED, "R_anchor falls from {} to {} while R_fmt stays at {}:",
        at_step("rl-weak-paragrpo-s0-metrics.jsonl", 1, "reward/anchor"),
        at_step("rl-weak-paragrpo-s0-metrics.jsonl", 30, "reward/anchor"),
        step_range(FIXED, ["rl-weak-paragrpo-s0-metrics.jsonl"], "reward/fmt", 1, 30, "1.00")),
    toy(LR_IN, "full-lr1e-4", "reference rose from {} (step 2) to {} at step 7 ({} at most), the sampled "
        "calls broke (parse failures {} on {} of the 18 steps from step 3, 0 on the others)",
        at_step("rl-weak-paragrpo-s0-metrics.jsonl", 2, "kl"),
        at_step("rl-weak-paragrpo-s0-metrics.jsonl", 7, "kl"),
        lambda p: f"{max(r['kl'] for r in steps_of(p / 'rl-weak-paragrpo-s0-metrics.jsonl').values()):.2f}",
        lambda p: (lambda v: f"{min(v):.2f}–{max(v):.1f}")(
            [r["tools/parse_failure_rate"] for s, r in steps_of(p / "rl-weak-paragrpo-s0-metrics.jsonl").items()
             if s >= 3 and r["tools/parse_failure_rate"] > 0]),
        lambda p: str(sum(r["tools/parse_failure_rate"] > 0
                          for s, r in steps_of(p / "rl-weak-paragrpo-s0-metrics.jsonl").items() if s >= 3))),
    toy(LR_IN, "full-lr1e-4", "after RL, tool use is {} and K = 4 accuracy {} ({} before, 4 answers of "
        "noise), K = 64 {} ({} before).",
        *(lambda p, k=k, f=f: f(read_json(p / "results.json")["eval"][k][
            "tool_usage_rate" if f is share else "accuracy"])
          for k, f in (("rl-weak-paragrpo-s0/k4", share), ("rl-weak-paragrpo-s0/k4", pct1),
                       ("sft-weak/k4", pct1), ("rl-weak-paragrpo-s0/k64", pct1),
                       ("sft-weak/k64", pct1)))),
]  # fmt: skip

CLAIMS += LETTER_RL_CLAIMS


# --------------------------------------------------------------------------- earlier runs

EQUICK_IN, LONG_IN, PROBES_IN = ("Quick mode with the perception warm-up",
                                 "A longer SFT probe", "Perception probes")  # fmt: skip
FULL_IN, FULL_EVAL_IN, FULL_STEPS_IN, READING_IN = (
    "Full experiment before the warm-up", "Before and after RL, eval split",
    "Per RL step (the trainer's", "Reading, plainly")  # fmt: skip


def recorded(
    folder: str,
    key: str,
    field: str,
    form: Callable[[float], str] = pct1,
    results: str = "results.json",
) -> Getter:
    """An eval as the runner recorded it in results.json (its summary.json is not committed)."""
    return lambda _: form(read_json(REPO / TOY / folder / results)["eval"][key][field])


def probe_log(file: str, part: str) -> Getter:
    """A perception probe's log (curriculum/*.json): the first step at 100%, or the last acc."""

    def text(p: Path) -> str:
        log = read_json(p / file)["log"]
        if part == "first100":
            return str(next(x["step"] for x in log if x["acc"] == 1.0))
        return f"{100 * log[-1]['acc']:.1f}%"

    return text


FULL_RUNS = {"vanilla_grpo-s0": "v", "paragrpo-s0": "p", "paragrpo-s1": "p", "vanilla_grpo-s1": "v",
             "anchor_only-s0": "a", "gating_only-s0": "g"}  # fmt: skip


def full_eval_row(name: str, results: str) -> Claim:
    cells = [recorded("full", f"{name}/k4", "accuracy", pct1, results),
             recorded("full", f"{name}/k4", "miou", TWO, results),
             recorded("full", f"{name}/k4", "tool_usage_rate", pct1, results),
             recorded("full", f"{name}/k64", "accuracy", pct1, results),
             recorded("full", f"{name}/k64", "miou", TWO, results),
             recorded("full", f"{name}/k64", "tool_usage_rate", pct1, results)]  # fmt: skip
    return toy(FULL_EVAL_IN, "full", f"| {name} |" + " {} |" * 6, *cells)


def fmt_range(runs: Sequence[str]) -> Getter:
    def text(p: Path) -> str:
        v = [r["reward/fmt"] for run in runs
             for r in steps_of(p / f"rl-strong-{run}-metrics.jsonl").values()]  # fmt: skip
        return f"{min(v):.2f}–{max(v):.2f}"

    return text


def full_fmt(recipe: str) -> Values:
    return lambda: [statistics.fmean(r["reward/fmt"] for r in run_steps("full", f"strong-{recipe}-s{s}"))
                    for s in (0, 1)]  # fmt: skip


EARLY_CLAIMS = [
    toy(EQUICK_IN, "quick", "| SFT | K = 4, tools on | {} | 24 / 24 | {} | {} |",
        recorded("quick", "sft-strong/k4", "accuracy"), recorded("quick", "sft-strong/k4", "tool_usage_rate", share),
        recorded("quick", "sft-strong/k4", "avg_calls", ONE)),
    toy(EQUICK_IN, "quick", "| SFT | K = 4, `--mode direct` | {} | — | {} | 0 |",
        recorded("quick", "sft-strong/k4-direct", "accuracy"),
        recorded("quick", "sft-strong/k4-direct", "tool_usage_rate", share)),
    toy(EQUICK_IN, "quick", "| SFT | K = 64, tools on | {} | 1 / 24 | {} | {} |",
        recorded("quick", "sft-strong/k64", "accuracy"),
        recorded("quick", "sft-strong/k64", "tool_usage_rate", lambda x: f"{100 * x:.0f}%"),
        recorded("quick", "sft-strong/k64", "avg_calls", ONE)),
    toy(EQUICK_IN, "quick", "| + 2 PARA-GRPO steps | K = 4, tools on | {} | 24 / 24 | {} | {} |",
        recorded("quick", "rl-strong-paragrpo-s0/k4", "accuracy"),
        recorded("quick", "rl-strong-paragrpo-s0/k4", "tool_usage_rate", share),
        recorded("quick", "rl-strong-paragrpo-s0/k4", "avg_calls", ONE)),
    toy(EQUICK_IN, "quick", "with tools on: we measured **{}**.", recorded("quick", "sft-strong/k4", "accuracy")),
    toy(EQUICK_IN, "quick", "(R_fmt {}, parse failures {}, κ {}). R_acc was {}.",
        *(lambda p, k=k, f=f: (lambda v: f.format(v[0]) if len(set(v)) == 1 else "?")(
            [r[k] for r in steps_of(p / "rl-strong-paragrpo-s0-metrics.jsonl").values()])
          for k, f in (("reward/fmt", "{:.1f}"), ("tools/parse_failure_rate", "{:g}"),
                       ("tools/kappa", "{:.1f}"))),
        lambda p: f"{statistics.fmean(r['reward/acc'] for r in steps_of(p / 'rl-strong-paragrpo-s0-metrics.jsonl').values()):g}"),
    toy(EQUICK_IN, "quick", "Wall time: {} s ({} min), not the ≤ 12 min asked.",
        wall("quick", "{:,.0f}"), wall("quick", "{:.0f}", 60)),
    toy(LONG_IN, "long-sft", "| checkpoint-100 | {} / {} | {} |",
        lambda p: f"{steps_of_sft(p / 'sft-metrics.jsonl', 100)['loss']:.3f}",
        lambda p: f"{steps_of_sft(p / 'sft-metrics.jsonl', 100)['mean_token_accuracy']:.3f}",
        lambda p: pct1(read_json(p / "eval-checkpoint100-k4-summary.json")["metrics"]["variants"]["robust"]["value"])),
    toy(LONG_IN, "long-sft", "| final, 200 steps | {} / {} | {} |",
        lambda p: f"{steps_of_sft(p / 'sft-metrics.jsonl', 200)['loss']:.3f}",
        lambda p: f"{steps_of_sft(p / 'sft-metrics.jsonl', 200)['mean_token_accuracy']:.3f}",
        lambda p: pct1(read_json(p / "eval-final-k4-summary.json")["metrics"]["variants"]["robust"]["value"])),
    toy(LONG_IN, "long-sft", "The {} is the share of `D` among the 24 gold letters",
        lambda p: pct1(read_json(p / "eval-final-k4-summary.json")["metrics"]["variants"]["robust"]["value"])),
    toy(LONG_IN, "long-sft", "({} s a step on the idle machine)",
        lambda p: f"{read_json(p / 'results.json')['seconds']['sft_step_idle_s']:.1f}"),
    toy(PROBES_IN, "curriculum", "| 2 | 4,096 | {} by step {} (`s_2.json`) |",
        lambda p: pct(max(x["acc"] for x in read_json(p / "s_2.json")["log"])),
        probe_log("s_2.json", "first100")),
    toy(PROBES_IN, "curriculum", "| 8 | 4,096 | {}, chance (`s_8_4096.json`) |", probe_log("s_8_4096.json", "last")),
    toy(PROBES_IN, "curriculum", "| 1 → 8 (60 steps at N = 1 first) | 4,096 | {} (`c_1to8.json`) |",
        lambda p: pct(read_json(p / "c_1to8.json")["log"][-1]["acc"])),
    toy(PROBES_IN, "curriculum", "| 1 → 8 → 80 (60 / 60 / 80 steps) | 1,024 (1 token) | {}, still rising",
        probe_log("c_1to80.json", "last")),
    toy(PROBES_IN, "curriculum", "| tool SFT | 150 | 98% (long episodes) | {} | {} ({}) |",
        answers("", "colour_right").__class__ and (lambda p: f"{read_json(p / 'eval-C150-k4-answers.json')['colour_right']} / 24"),
        lambda p: f"{read_json(p / 'eval-C150-k4-answers.json')['correct']} / 24",
        lambda p: pct1(read_json(p / "eval-C150-k4-summary.json")["metrics"]["variants"]["robust"]["value"])),
    toy(PROBES_IN, "", "| tool SFT | 270 | — | 23 / 24 | 12 / 24 ({}) |", recorded("quick", "sft-strong/k4", "accuracy")),
    *(full_eval_row(f"rl-strong-{n}", f"results-full-{tag}.json") for n, tag in FULL_RUNS.items()),
    full_eval_row("sft-strong", "results-full.json"),
    *step_rows(FULL_STEPS_IN, "full", {f"strong-{n}": f"rl-strong-{n}-metrics.jsonl" for n in FULL_RUNS},
               (1, 2, 3, 4), (("reward/acc", fixed(3)), ("reward/fmt", fixed(3)),
                              ("reward/anchor", fixed(3)), ("reward/tool", fixed(3)),
                              ("tools/kappa", TWO), ("tools/parse_failure_rate", TWO), MEAN_K)),
    toy(READING_IN, "full", "(40 SFT steps, loss {}, token accuracy {})",
        lambda p: f"{read_lines(p / 'sft-strong-metrics.jsonl')[-1]['loss']:.2f}",
        lambda p: f"{read_lines(p / 'sft-strong-metrics.jsonl')[-1]['mean_token_accuracy']:.2f}"),
    toy(READING_IN, "full", "PARA-GRPO's R_fmt is higher than vanilla's at every step ({} against {}), "
        "though two seeds do not show the gap in their means ({}, paired {}).",
        fmt_range(["paragrpo-s0", "paragrpo-s1"]), fmt_range(["vanilla_grpo-s0", "vanilla_grpo-s1"]),
        gap(full_fmt("vanilla_grpo"), full_fmt("paragrpo"), "mean", 2),
        gap(full_fmt("vanilla_grpo"), full_fmt("paragrpo"), "paired", 2)),
    toy(READING_IN, "full", "`anchor_only` ({}) tracks PARA-GRPO and `gating_only` ({}) tracks vanilla",
        fmt_range(["anchor_only-s0"]), fmt_range(["gating_only-s0"])),
    toy(READING_IN, "full", "seed 0 of PARA-GRPO goes {} → {} and seed 1 goes {} → {}.",
        *(at_step(f"rl-strong-paragrpo-s{s}-metrics.jsonl", step, "reward/fmt")
          for s in (0, 1) for step in (1, 4))),
]  # fmt: skip

CLAIMS += EARLY_CLAIMS


def steps_of_sft(path: Path, step: int) -> dict:
    """An SFT run's logged row at ``step`` (its metrics.jsonl has no rewards)."""
    return next(r for r in read_lines(path) if r.get("step") == step and "loss" in r)


# --------------------------------------------------------------------------- the rest of the log

#: the result folders of the text answer form (2 Dec on): the `paper` reading credits none
TEXT_FORM = ("quick-text", "quick-text-100", "quick-text-270", "rl-weak-text", "rl-strong-text",
             "rl-weak-corrected", "rl-weak-vllm", "samplers-3x3", "paradox-3seeds",
             "server-staleness-3seeds")  # fmt: skip


def paper_max(_: Path) -> str:
    """The highest `paper` reading of any text-form eval."""
    return pct(max(read_json(s)["metrics"]["variants"]["paper"]["value"]
                   for f in TEXT_FORM for s in sorted((REPO / TOY / f / "eval").glob("*/summary.json"))))  # fmt: skip


def last_loss(folder: str) -> float:
    return [r for r in read_lines(REPO / TOY / folder / "sft-strong-metrics.jsonl") if "loss" in r][
        -1
    ]["loss"]


def pooled(base: Values, other: Values) -> Getter:
    """The pooled-variance t-interval this table reported before 7 Dec 2026 (df = n_a + n_b - 2):
    kept to show what it assumed."""

    def text(_: Path) -> str:
        a, b = base(), other()
        df = len(a) + len(b) - 2
        var = ((len(a) - 1) * statistics.variance(a) + (len(b) - 1) * statistics.variance(b)) / df
        half = intervals.t_quantile(df) * (var * (1 / len(a) + 1 / len(b))) ** 0.5
        d = statistics.fmean(b) - statistics.fmean(a)
        return f"[{d - half:.1f}, {d + half:.1f}]"

    return text


DEMO_IN, DEMO16_IN, DEMO8_IN = ("The shipped demo model", "The demo from 4 to 6 Dec",
                                "The demo before 4 Dec")  # fmt: skip
REST_CLAIMS = [
    toy("The answer form", "", "credits none of these answers ({} in every table below)", paper_max),
    toy(BUILDS_IN, "quick-rebuild", "its eval code read the {} model's 60 answers", acc(f"build-1/{SFT_K4}")),
    toy(SPREAD_IN, "", "Without the tool every build scores {}.",
        lambda _: pcts(max(build_acc(f, DIRECT) for f in BUILDS.values()))),
    toy(SPREAD_IN, "", "(the five builds that logged one ({} against {} to {})".replace("(the five", "the five"),
        lambda _: f"{last_loss(BUILDS['d0-t1']):.3f}",
        lambda _: f"{min(last_loss(BUILDS[b]) for b in ('d1-t1', 'd2-t1', 'd1-t2', 'd2-t2')):.3f}",
        lambda _: f"{max(last_loss(BUILDS[b]) for b in ('d1-t1', 'd2-t1', 'd1-t2', 'd2-t2')):.3f}"),
    toy(SPREAD_IN, "", "(\"A robust chain\", below: {} to {}% over",
        spread_of("average", "min"), spread_of("average", "max")),
    toy(ROBUST_IN, "", "at K = 4 with tools, so within the ±5 points asked; without the tool every build "
        "scores {}.", lambda _: pcts(max(build_acc(f, DIRECT) for f in chain("average").values()))),
    toy(DEMO_IN, "demo-eval/eval/demo-fp16-4", "**{}** ({}) at K = 4 on the eval split",
        acc(""), right("")),
    toy(DEMO16_IN, "demo-eval-16a55e9/eval/demo-fp16-4", "in fp16: **{}** ({}) at K = 4 on the eval split",
        acc(""), right("")),
    toy(DEMO16_IN, "quick-rebuild", "one thread gives {}.", acc(f"build-1/{SFT_K4}")),
    toy(DEMO8_IN, "demo-eval-8326dad/eval/demo-fp16-4", "quick chain\"): **{}** ({}) in fp32 and fp16",
        acc(""), right("")),
    toy(DEMO8_IN, "demo-eval-8326dad/eval/demo-fp16-4", "answers one colour (tool use {}, {} calls a "
        "question)", use(""), calls("")),
    toy(PARADOX_IN, PARADOX, "({} s; K = 4 {}, K = 64 {}, tool use {} at both)",
        seconds("sft-weak"), acc("eval/sft-weak-4"), acc("eval/sft-weak-64"),
        lambda p: use("eval/sft-weak-4")(p) if use("eval/sft-weak-4")(p) == use("eval/sft-weak-64")(p) else "?"),
    toy(PARADOX_IN, PARADOX, "A pooled-variance interval, reported here until 7 Dec 2026, gave {}:",
        pooled(arm("vanilla_grpo", "acc_k4"), arm("paragrpo", "acc_k4"))),
    toy(STALE_IN, STALE, "(K = 4 {}, K = 64 {}, tool use {} at both)", acc("eval/sft-weak-4"),
        acc("eval/sft-weak-64"),
        lambda p: use("eval/sft-weak-4")(p) if use("eval/sft-weak-4")(p) == use("eval/sft-weak-64")(p) else "?"),
    toy(SAMPLERS_IN, "", "the {}-point gap of 2 Dec (two seeds a sampler",
        lambda _: gap(v2_arm("vllm", "acc_k4"), v2_arm("hf", "acc_k4"), "mean")(_).lstrip("+")),
    toy(STATUS, "", "The 2 Dec comparison ({} points lower, confounded)",
        lambda _: gap(v2_arm("vllm", "acc_k4"), v2_arm("hf", "acc_k4"), "mean")(_).lstrip("+")),
    toy(SAMPLERS_IN, SAMPLERS, "is {}–{} at every step (float32 rounding)",
        lambda _: f"{min(r['sampling/sampling_logp_difference/mean'] for s in range(3) for r in run_steps(SAMPLERS, f'weak-paragrpo-vllm-s{s}')) * 1e7:.1f}",  # in units of 1e-7
        lambda _: sci(max(r['sampling/sampling_logp_difference/mean'] for s in range(3) for r in run_steps(SAMPLERS, f'weak-paragrpo-vllm-s{s}')))),
    toy(SAMPLERS_IN, SAMPLERS, "in two seeds of three ({} / {}, {} / {}); vLLM seed 2's {} goes with its "
        "K = 64 fall.",
        *(lambda _, n=n, s=s: f"{numbers(SAMPLERS, f'weak-paragrpo{INFIX[n]}-s{s}')['kl_last5']:.3f}"
          for s in (0, 1) for n in ("hf", "vLLM")),
        lambda _: f"{numbers(SAMPLERS, 'weak-paragrpo-vllm-s2')['kl_last5']:.3f}"),
    toy(SAMPLERS_IN, SAMPLERS, "start at K = 64 ({}, where the 64 overview frames", acc("eval/sft-weak-64")),
    toy(SAMPLERS_IN, SAMPLERS, "hf seed 1 {} (7 misses, 6 of them \"green\"), vLLM seed 2 {} (12 misses,",
        acc("eval/rl-weak-paragrpo-s1-64"), acc("eval/rl-weak-paragrpo-vllm-s2-64")),
    toy(SAMPLERS_IN, "", "against {} for the 30-step hf runs of 2 Dec",
        lambda _: f"{statistics.fmean(v2_arm('hf', 'acc_k4')()) - build_acc(CORR, 'eval/sft-weak-4'):+.1f}"),
    toy(SAMPLERS_IN, SAMPLERS, "is hf seed 0 above: {} → {} at K = 4, tool use {} → {}, in 20 steps; the "
        "30-step run on the 2 Dec reward reached {} from the same score",
        acc("eval/sft-weak-4"), acc("eval/rl-weak-paragrpo-s0-4"), use("eval/sft-weak-4"),
        use("eval/rl-weak-paragrpo-s0-4"),
        lambda _: acc(f"{CORR}/eval/rl-weak-paragrpo-s0-4")(REPO / TOY)),
    toy("hf and openai backends", "", "run beside the RL runs; {} at K = 4)", acc(f"quick-text-100/{SFT_K4}")),
    toy("hf and openai backends", "", "accuracy {} on both",
        lambda _: (lambda h: pct(h["hf"]["headline"]["value"])
                   if h["hf"]["headline"]["value"] == h["openai"]["headline"]["value"] else "?")(
            read_json(REPO / "benchmarks/results/bench_backend_agreement.json")["headline"])),
    toy(STOOD_IN, DRILL, "a drill of 12 lookups a sequence reaches {} in ~750",
        drill_at("drill-then-still/all-loss/drill.json", 750)),
    toy(LETTER_IN, DRILL, "sits at chance ({}%) for 250–400 steps",
        lambda p: "–".join(f"{100 * f(c['letter_acc'] for c in read_json(p / 'drill-then-still/letters-loss/drill.json')['curve'] if c['step'] <= 250):.0f}"
                           for f in (min, max))),
    toy(LETTER_IN, DRILL, "letters-only drill it starts at a loss of {}",
        lambda p: f"{read_lines(p / 'drill-then-still/letters-loss/still-metrics.jsonl')[0]['loss']:.1f}"),
    toy(LETTER_IN, DRILL, "form (the question's list, then the oracle's whole final turn; 150 steps, from "
        "the drilled model) reaches {} on its own text",
        drill_at("drill-then-still/episode-form/drill.json", 150)),
    toy(LETTER_IN, DRILL, "The lookup the model does on text at {} transfers",
        drill_at("rehearsal/still-rehearse.json", 400)),
    toy(LETTER_IN, DRILL, "while the same weights match it on the drill's text {} of the time.",
        drill_at("rehearsal/sft-rehearse.json", 270)),
    toy(LETTER_IN, DRILL, "rehearsed beside the episodes it survives on text ({})",
        drill_at("rehearsal/sft-rehearse.json", 270)),
    toy(EQUICK_IN, "quick", "In direct mode it scores {}, within the ≤ 40% bound. That {} partly",
        recorded("quick", "sft-strong/k4-direct", "accuracy", share),
        recorded("quick", "sft-strong/k4-direct", "accuracy", share)),
    toy(READING_IN, "full", "κ = 0 and parse failures = {} at every step of every run.",
        lambda p: (lambda v: f"{v.pop():.2f}" if len(v) == 1 else "?")(
            {r["tools/parse_failure_rate"] for f in sorted(p.glob("rl-strong-*-metrics.jsonl"))
             for r in steps_of(f).values()})),
    toy(READING_IN, "full", "Eval: {} accuracy, {} mIoU and {} tool use at K = 4 and K = 64, before and "
        "after RL.",
        *(lambda p, k=k, f=f: (lambda v: f(v.pop()) if len(v) == 1 else "?")(
            {e[k] for r in sorted(p.glob("results-full*.json")) for e in read_json(r)["eval"].values()})
          for k, f in (("accuracy", share), ("miou", TWO), ("tool_usage_rate", share)))),
]  # fmt: skip

CLAIMS += REST_CLAIMS

# the vLLM guide quotes the k = 0 against k = 2 comparison
CLAIMS.append(
    said(
        "docs/train/VLLM.md",
        f"{TOY}/{STALE}",
        fill(
            "and none under {} points of K = 4 accuracy is excluded",
            lambda p: f"{float(gap(at_k(0, 'acc_k4'), at_k(2, 'acc_k4'), 'detectable')(p)):.0f}",
        ),
    )
)


# --------------------------------------------------------------------------- prepared, not run

PREPARED_IN = "Prepared, not run"
sys.path.insert(0, str(REPO / "experiments/toy_paradox/probes"))
import cost  # noqa: E402
import power  # noqa: E402

HF_REFS, SERVER_REFS = (
    ("paradox-3seeds", "samplers-3x3"),
    ("server-staleness-3seeds", "server-staleness"),
)
HF_MATCH = r"rl-weak-(?!.*vllm)"


def plan_part(refs: Sequence[str], match: str, runs: int, steps: int, cores: int, lanes: int,
              pace: str, key: str) -> Getter:  # fmt: skip
    """A number of probes/cost.py's plan, from the committed references' results.json."""

    def text(_: Path) -> str:
        p = cost.paces([REPO / TOY / r for r in refs], match)
        return f"{cost.plan(p, runs, steps, cores, lanes)[pace][key]:g}"

    return text


def projected(
    folder: str, cells: dict[str, str], base: str, cell: str, key: str, seeds: int
) -> Getter:
    """probes/power.py's gap found with 80% power at ``seeds`` seeds, the spread as it is."""

    def text(_: Path) -> str:
        r = power.table(REPO / TOY / folder, cells, base, [0, 1, 2], [key], seeds)
        gap = r["cells"][cell][key][f"minus_{base}"]
        return f"{(gap['detectable_paired_planned']['gap'] if seeds != 3 else gap['detectable_paired']):.1f}"

    return text


PARADOX_CELLS = {r: f"weak-{r}-s{{seed}}" for r in RECIPES}
K_CELLS = {"k0": "weak-paragrpo-server-k0-s{seed}", "k2": "weak-paragrpo-server-k2-s{seed}"}
PREPARED_CLAIMS = [
    toy(PREPARED_IN, "", "`results/samplers-3x3/`, {} runs): {} s a step at the median pace and {} s "
        "at the slowest, so {} CPU hours ({} h on the two cores) to {} ({} h); at 30 steps {} to {} "
        "CPU hours.",
        lambda _: str(len(cost.paces([REPO / TOY / r for r in HF_REFS], HF_MATCH)["step_s"])),
        plan_part(HF_REFS, HF_MATCH, 25, 20, 1, 2, "median", "seconds_a_step"),
        plan_part(HF_REFS, HF_MATCH, 25, 20, 1, 2, "slowest", "seconds_a_step"),
        plan_part(HF_REFS, HF_MATCH, 25, 20, 1, 2, "median", "cpu_hours"),
        plan_part(HF_REFS, HF_MATCH, 25, 20, 1, 2, "median", "wall_hours"),
        plan_part(HF_REFS, HF_MATCH, 25, 20, 1, 2, "slowest", "cpu_hours"),
        plan_part(HF_REFS, HF_MATCH, 25, 20, 1, 2, "slowest", "wall_hours"),
        plan_part(HF_REFS, HF_MATCH, 25, 30, 1, 2, "median", "cpu_hours"),
        plan_part(HF_REFS, HF_MATCH, 25, 30, 1, 2, "slowest", "cpu_hours")),
    toy(PREPARED_IN, "", "K = 4 accuracy gap of {} points found with 80% power between arms whose "
        "seeds agree (anchoring only against vanilla), and {} points where one seed stalls",
        projected(PARADOX, PARADOX_CELLS, "vanilla_grpo", "anchor_only", "acc_k4", 5),
        projected(PARADOX, PARADOX_CELLS, "vanilla_grpo", "paragrpo", "acc_k4", 5)),
    toy(PREPARED_IN, "", "10 runs of 20 steps: {} s a step at the median pace of the committed server "
        "runs and {} s at the slowest", plan_part(SERVER_REFS, "rl-", 10, 20, 2, 1, "median", "seconds_a_step"),
        plan_part(SERVER_REFS, "rl-", 10, 20, 2, 1, "slowest", "seconds_a_step")),
    toy(PREPARED_IN, "", "`results/server-staleness/`, {} runs), so {} CPU hours ({} h) to {} ({} h); at "
        "30 steps, where the two-seed runs' open think appeared, {} to {}.",
        lambda _: str(len(cost.paces([REPO / TOY / r for r in SERVER_REFS], "rl-")["step_s"])),
        *(plan_part(SERVER_REFS, "rl-", 10, 20, 2, 1, pace, k)
          for pace in ("median", "slowest") for k in ("cpu_hours", "wall_hours")),
        plan_part(SERVER_REFS, "rl-", 10, 30, 2, 1, "median", "cpu_hours"),
        plan_part(SERVER_REFS, "rl-", 10, 30, 2, 1, "slowest", "cpu_hours")),
    toy(PREPARED_IN, "", "five seeds find a K = 4 accuracy gap of {} points with 80% power ({} at "
        "three) and a K = 64 gap of {} ({} at three).",
        projected(STALE, K_CELLS, "k0", "k2", "acc_k4", 5), projected(STALE, K_CELLS, "k0", "k2", "acc_k4", 3),
        projected(STALE, K_CELLS, "k0", "k2", "acc_k64", 5), projected(STALE, K_CELLS, "k0", "k2", "acc_k64", 3)),
]  # fmt: skip

CLAIMS += PREPARED_CLAIMS
