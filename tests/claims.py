"""The registry of numbers the docs quote from runs, each tied to the committed file it comes from.

Every entry says where the number is written (a doc and a quote from it, whitespace as in the
text but line breaks free), which committed file holds it, and how to compute the quoted text
from that file. ``tests/test_claims.py`` recomputes each one; a doc that drifts from its file, or
cites a file that is not committed, fails there. Add a claim here when a doc quotes a new number
from a run.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
TOY = "experiments/toy_paradox/results"
DEMO_EVAL = f"{TOY}/demo-eval/eval/demo-fp16-4/summary.json"
WORDS = {4: "four", 5: "five"}


@dataclass(frozen=True)
class Claim:
    """``quote`` is found in ``doc``; ``compute(source)`` is text found in ``quote``."""

    doc: str
    quote: str
    source: str
    compute: Callable[[Path], str]


# --------------------------------------------------------------------------- readers


def _json(path: Path):
    return json.loads(path.read_text())


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def pct(value: float) -> str:
    """``0.9833 → "98.3%"``, ``1.0 → "100%"``: how the docs write a share."""
    text = f"{value * 100:.1f}"
    return (text[:-2] if text.endswith(".0") else text) + "%"


def accuracy(path: Path) -> float:
    return _json(path)["metrics"]["variants"]["robust"]["value"]


def right_of(path: Path, sep: str = " / ") -> str:
    """``"59 / 60"`` from an eval's summary.json."""
    m = _json(path)["metrics"]
    return f"{round(m['variants']['robust']['value'] * m['n'])}{sep}{m['n']}"


def summary(folder: str) -> str:
    return f"{TOY}/{folder}/summary.json"


def seeds_right(first: int, stop: int) -> Callable[[Path], str]:
    return lambda p: str(sum(r["acc"] == 1.0 for r in _lines(p) if first <= r["seed"] < stop))


def oracle_row(k: int, prior: int, noise: int) -> Callable[[Path], str]:
    """One row of docs/TOY_TASK.md's oracle table from bench_toy_oracle.json."""

    def row(path: Path) -> str:
        [r] = [
            r
            for r in _json(path)["results"]
            if (r["K"], r["tool_prior"], r["format_noise"]) == (k, prior, noise)
        ]
        kappa = f"{r['kappa']:.2f}" if r["kappa"] else "0"
        cells = [k, prior, noise, pct(r["mcq_accuracy"]), f"{r['tvg_miou']:.2f}"]
        cells += [pct(r["tvg_iou_ge_0.5"]), f"{r['r_fmt']:.2f}", kappa]
        return "| " + " | ".join(str(c) for c in cells + [r["parse_failures"]]) + " |"

    return row


def visibility_row(k: int) -> Callable[[Path], str]:
    """One row of docs/TOY_TASK.md's visibility table from the committed task.json."""

    def share(x: float) -> str:  # this table keeps one decimal: "32.0%"
        return "100%" if x == 1 else f"{x * 100:.1f}%"

    def row(path: Path) -> str:
        v = _json(path)["splits"]["train"]["visibility"][str(k)]
        return f"| {k} | {share(v['measured'])} | {share(v['expected'])} |"

    return row


def peak_rss(label: str, batch: int) -> Callable[[Path], str]:
    def read(path: Path) -> str:
        for m in _json(path)["measurements"]:
            if m["label"] == label:
                [run] = [r for r in m["runs"] if r["batch_size"] == batch]
                return f"{run['peak_rss_gb']:.2f} GB"
        raise KeyError(label)

    return read


# --------------------------------------------------------------------------- the claims

ASYNC_STEPS = "benchmarks/results/bench_async_steps.json"


def _trimmed(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def async_row(k: int) -> Callable[[Path], str]:
    """One row of benchmarks/README.md's steps-an-hour table (k, steps/h, ratio, step parts)."""

    def row(path: Path) -> str:
        d = _json(path)
        run = next(r for r in d["runs"] if r["k"] == k)
        ratio = f"{d['per_k'][str(k)]['ratio_to_k0']:.2f}"
        produced = run["produced_rollout_s_2_on"]
        return (
            f"| {k} | {d['per_k'][str(k)]['mean']:.1f} | {ratio if k == 0 else f'**{ratio}**'} "
            f"| {run['step_wall_mean_s_2_on']:.1f} | {run['rollout_segment_s_2_on']:.2f} "
            f"| {run['learning_s_2_on']:.1f} | {'-' if produced is None else f'{produced:.2f}'} "
            f"| {_trimmed(run['staleness_mean'])} / {run['staleness_max']:.0f} "
            f"| {run['completion_tokens_mean']:.0f} |"
        )

    return row


SPREAD = f"{TOY}/rebuild-spread/spread.json"
SFT_K4 = "sft K=4 tools (60)"


def spread_line(path: Path) -> str:
    """The SFT accuracy's range and spread over the rebuilds, as the toy README words it."""
    s = _json(path)["stages"][SFT_K4]
    return f"**{s['min']} to {s['max']}% (spread {s['spread']} points)**"


def spread_stats(path: Path) -> str:
    s = _json(path)["stages"][SFT_K4]
    return f"({s['min']} to {s['max']}; mean {s['mean']}, sd {s['sd']}"


def spread_build(name: str) -> Callable[[Path], str]:
    """One build's row: its SFT accuracy at K = 4 (tools, direct) and after RL."""

    def compute(path: Path) -> str:
        (row,) = [b for b in _json(path)["builds"] if b["build"] == name]
        acc = row["accuracy"]
        return f"{acc[SFT_K4]}% | {acc['sft K=4 direct (60)']:.0f}% | {acc['rl K=4 tools (30)']:g}"

    return compute


ROBUST = f"{TOY}/robust-chain"


def range_of(path: Path, with_stats: bool = False) -> str:
    """A spread file's SFT accuracy range at K = 4, as "96.7 to 100% (spread 3.3 points" (with
    its mean and sd after)."""
    s = _json(path)["stages"][SFT_K4]
    text = f"{s['min']:g} to {s['max']:g}% (spread {s['spread']:g} points"
    return text + (f"; mean {s['mean']:g}, sd {s['sd']:g}" if with_stats else "")


def robust_row(name: str) -> Callable[[Path], str]:
    """One build's row of "A robust chain": the 90-step chain, the selection and the average."""

    def compute(folder: Path) -> str:
        def build(spread: str) -> dict:
            rows = _json(folder / spread)["builds"]
            return next(b for b in rows if b["build"] == name)

        old = next(b for b in _json(REPO / SPREAD)["builds"] if b["build"] == name)
        sel, avg = build("spread-select.json"), build("spread-average.json")
        step = sel["selection"]["chosen_step"]
        acc = avg["accuracy"]
        cells = [
            f"{old['accuracy'][SFT_K4]:g}%",
            f"{step} ({sel['selection']['val_accuracy'][str(step)]:g}%)",
            f"{sel['accuracy'][SFT_K4]:g}%",
            f"**{acc[SFT_K4]:g}%**",
            f"{acc['sft K=4 direct (60)']:g}%",
            f"{acc['rl K=4 tools (30)']:g}%",
        ]
        return f"| {old['threads']} | {old['data_seed']} | " + " | ".join(cells) + " |"

    return compute


def candidates_line(path: Path) -> str:
    rows = _json(path)["candidates"]
    evals = [f"{r['eval_accuracy_60']:.1f}" for r in rows]
    return ", ".join(evals[:-1]) + f" and {evals[-1]}% at steps {rows[0]['step']}"


def async_bound(path: Path) -> str:
    return f"{_json(path)['bounds_from_k0']['bound_(P+R+L)/(P+max(R,L+R_cpu))']:.2f}×"


def async_steps_line(path: Path) -> str:
    k = _json(path)["per_k"]
    return (
        f"{k['0']['mean']:.0f}, {k['1']['mean']:.0f} and {k['2']['mean']:.0f}, so k = 2 is "
        f"{k['2']['ratio_to_k0']:.2f}×"
    )


def async_segments(path: Path) -> str:
    runs = {r["k"]: r for r in _json(path)["runs"]}
    return (
        f"({runs[0]['rollout_segment_s_2_on']:.1f} s → {runs[2]['rollout_segment_s_2_on']:.2f} s a"
    )


PARADOX = f"{TOY}/paradox-3seeds/paradox_table.json"
#: the paradox table's columns: paradox_table.json's numbers, in the README's order
PARADOX_COLUMNS = ("acc_k4", "acc_k64", "tool_use_k4", "tool_use_k64", "kappa_last5")


def _t(cell: dict, decimals: int = 1, sign: str = "") -> str:
    """A t-interval as the toy README writes it: "46.7 [30.1, 63.3]" (not clipped to 0-100);
    ``sign="+"`` signs the mean, as a difference is written."""
    d = decimals
    return f"{cell['mean']:{sign}.{d}f} [{cell['lo']:.{d}f}, {cell['hi']:.{d}f}]"


#: the paradox table's row names in the README, by recipe
PARADOX_LABELS = {"vanilla_grpo": "vanilla GRPO", "anchor_only": "anchoring only",
                  "gating_only": "gating only", "paragrpo": "PARA-GRPO"}  # fmt: skip


def paradox_row(recipe: str) -> Callable[[Path], str]:
    """One row of the toy README's three-seed paradox table: each column's mean over seeds with
    its 95% t-interval, then R_fmt's mean."""

    def row(path: Path) -> str:
        t = _json(path)["table"][recipe]
        cells = [PARADOX_LABELS[recipe], *(_t(t[k]["seeds"]) for k in PARADOX_COLUMNS)]
        return "| " + " | ".join(cells) + f" | {t['r_fmt_last5']['seeds']['mean']:.2f} |"

    return row


def paradox_gap(recipe: str, base: str, key: str) -> Callable[[Path], str]:
    """One difference of the paradox table (recipe minus base): the difference of the means,
    then the unpaired and the paired 95% intervals."""

    def gap(path: Path) -> str:
        d = _json(path)["table"][recipe][key][f"minus_{base}"]
        u, p = d["unpaired"], d["paired"]
        return f"{u['mean']:+.1f} | [{u['lo']:.1f}, {u['hi']:.1f}] | [{p['lo']:.1f}, {p['hi']:.1f}]"

    return gap


def paradox_gaps(recipe: str) -> Callable[[Path], str]:
    """One row of the differences against vanilla GRPO: K = 4 accuracy, then K = 4 tool use."""

    def row(path: Path) -> str:
        cells = [paradox_gap(recipe, "vanilla_grpo", k)(path) for k in ("acc_k4", "tool_use_k4")]
        return f"| {PARADOX_LABELS[recipe]} | " + " | ".join(cells) + " |"

    return row


def paradox_seeds(path: Path) -> str:
    """The K = 4 accuracy of every seed, as the toy README lists them."""
    table = _json(path)["table"]

    def seeds(recipe: str) -> str:
        *first, last = (f"{v:.1f}" for v in table[recipe]["acc_k4"]["seeds"]["values"])
        return ", ".join(first) + f" and {last}"

    return (
        f"PARA-GRPO {seeds('paragrpo')}; vanilla GRPO {seeds('vanilla_grpo')}; anchoring only "
        f"{table['anchor_only']['acc_k4']['seeds']['mean']:.1f} in all three; gating only "
        f"{seeds('gating_only')}"
    )


def paradox_status(path: Path) -> str:
    """The toy README's status row: K = 4 accuracy of the four recipes, then the gap."""
    t = _json(path)["table"]
    para, gap = t["paragrpo"]["acc_k4"]["seeds"], t["paragrpo"]["acc_k4"]["minus_vanilla_grpo"]
    others = [
        t[r]["tool_use_k4"]["seeds"]["mean"] for r in ("vanilla_grpo", "anchor_only", "gating_only")
    ]
    para_calls = t["paragrpo"]["tool_use_k4"]["seeds"]["mean"]
    calls = f"{para_calls:.0f}% against {min(others):.0f}-{max(others):.0f}%"
    return (
        f"PARA-GRPO **{para['mean']:.1f}** [{para['lo']:.1f}, {para['hi']:.1f}] against vanilla "
        f"{_t(t['vanilla_grpo']['acc_k4']['seeds'])}, anchoring only "
        f"{t['anchor_only']['acc_k4']['seeds']['mean']:.1f}, gating only "
        f"{t['gating_only']['acc_k4']['seeds']['mean']:.1f}; tool use at K = 4 {calls}; "
        f"PARA-GRPO minus vanilla {gap['unpaired']['mean']:+.1f} points, unpaired interval "
        f"[{gap['unpaired']['lo']:.1f}, {gap['unpaired']['hi']:.1f}]"
    )


def paradox_detectable(path: Path) -> str:
    """The smallest K = 4 accuracy gap the table can tell from seed noise (the unpaired
    half-width): the two ablations' mean against vanilla, then PARA-GRPO's."""
    t = _json(path)["table"]

    def half(recipe: str) -> float:
        return t[recipe]["acc_k4"]["minus_vanilla_grpo"]["unpaired"]["half_width"]

    ablations = statistics.fmean(half(r) for r in ("anchor_only", "gating_only"))
    return (
        f"about {ablations:.0f} points between the two ablations and vanilla (their seeds agree), "
        f"and {half('paragrpo'):.1f} points"
    )


STALENESS = f"{TOY}/server-staleness-3seeds/staleness-k0-k2.json"


def staleness_row(key: str, decimals: int = 1) -> Callable[[Path], str]:
    """One row of the toy README's k = 0 against k = 2 table, after its label: each k's mean over
    seeds with its 95% t-interval, the paired difference with its own, and whether the two
    intervals overlap."""

    def row(path: Path) -> str:
        s = _json(path)["summary"][key]
        cells = [_t(s["k0"], decimals), _t(s["k2"], decimals), _t(s["k2-k0_paired"], decimals, "+")]
        return " | ".join(cells) + f" | {'yes' if s['intervals_overlap'] else 'no'} |"

    return row


def staleness_seeds(key: str) -> Callable[[Path], str]:
    """One number's value in every seed, k = 0 then k = 2, as the toy README lists them."""

    def seeds(path: Path) -> str:
        s = _json(path)["summary"][key]
        k0, k2 = (", ".join(f"{v:.1f}" for v in s[k]["values"]) for k in ("k0", "k2"))
        return f"k = 0 {k0}; k = 2 {k2}"

    return seeds


def staleness_open_thinks(path: Path) -> str:
    """Answer turns left with a think open, over the three seeds, at each k and K."""
    s = _json(path)["summary"]

    def total(key: str, k: str) -> int:
        return round(sum(s[key][k]["values"]))

    return "; ".join(
        f"k = {k[1]}: {total('open_think_k4', k)} of 180"
        + (" at K = 4 and " if k == "k0" else " and ")
        + f"{total('open_think_k64', k)} of 72"
        + (" at K = 64" if k == "k0" else "")
        for k in ("k0", "k2")
    )


def staleness_seconds(path: Path) -> str:
    """The training seconds of the k = 2 runs against the k = 0 ones, summed over seeds."""
    commands = _json(path)["commands"]

    def total(k: int) -> float:
        return sum(
            v["seconds"]
            for n, v in commands.items()
            if n.startswith(f"rl-weak-paragrpo-server-k{k}-")
        )

    k2, k0 = total(2), total(0)
    return f"{k2:.0f} s over its three runs against {k0:.0f} s for k = 0 ({k2 / k0:.2f}×)"


def staleness_truncation(folder: Path) -> str:
    """How much of the k = 2 runs' tokens the importance-weight truncation touched."""
    key = "sampling/importance_sampling_ratio/truncated_share"
    steps = (
        row
        for path in sorted(folder.glob("rl-weak-paragrpo-server-k2-s*-metrics.jsonl"))
        for row in _lines(path)
    )
    shares = [row[key] for row in steps if key in row]
    return (
        f"{100 * statistics.fmean(shares):.2f}% of the tokens on average ({100 * max(shares):.2f}% "
        f"in the worst step; {sum(x > 0 for x in shares)} of {len(shares)} steps touched any)"
    )


def staleness_status(path: Path) -> str:
    """The toy README's status row for k = 0 against k = 2."""
    s = _json(path)["summary"]
    acc4, acc64 = s["acc_k4"], s["acc_k64"]
    k0 = acc4["k0"]
    same = _t(k0) == _t(acc4["k2"])
    at = "at both k" if same else f"at k = 0, {_t(acc4['k2'])} at k = 2"
    return (
        f"K = 4 accuracy **{k0['mean']:.1f}** [{k0['lo']:.1f}, {k0['hi']:.1f}] {at}; K = 64 {acc64['k0']['mean']:.1f} against {_t(acc64['k2'])}; "
        f"k = 2 − k = 0 paired {_t(acc4['k2-k0_paired'], sign='+')} at K = 4 (the smallest gap "
        f"it can tell: {acc4['k2-k0_paired']['half_width']:.1f} points)"
    )


def staleness_detectable(path: Path) -> str:
    """The paired half-widths at K = 4 and K = 64, and the K = 4 seeds' swing."""
    s = _json(path)["summary"]
    d4 = s["acc_k4"]["k2-k0_paired"]
    return (
        f"{d4['half_width']:.1f} points at K = 4 (the seeds trade places: k = 2 is ahead on seed 0 "
        f"and behind on seed 2 by the same {d4['values'][0]:.1f} points) and "
        f"{s['acc_k64']['k2-k0_paired']['half_width']:.1f} at K = 64"
    )


CLAIMS = [
    # the rebuild spread of the quick chain (experiments/toy_paradox/README.md, "Six builds")
    Claim(
        "experiments/toy_paradox/README.md",
        "**66.7 to 98.3% (spread 31.6 points)**",
        SPREAD,
        spread_line,
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "(66.7 to 98.3; mean 91.7, sd 12.4",
        SPREAD,
        spread_stats,
    ),
    *(
        Claim("experiments/toy_paradox/README.md", quote, SPREAD, spread_build(name))
        for name, quote in [
            ("d1-t1", "96.7% | 0% | 96.7"),
            ("d2-t1", "93.3% | 0% | 100"),
            ("d1-t2", "98.3% | 0% | 100"),
            ("d2-t2", "96.7% | 0% | 96.7"),
        ]
    ),
    # the robust chain (experiments/toy_paradox/README.md, "A robust chain")
    Claim(
        "experiments/toy_paradox/README.md",
        "**96.7 to 100% over the same six builds (spread 3.3 points)**",
        f"{ROBUST}/spread-average.json",
        lambda p: "{} over the same six builds (spread {}".format(*range_of(p).split(" (spread ")),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "within 96.7 to 100% (spread 3.3 points; mean 99.5, sd 1.3)",
        f"{ROBUST}/spread-average.json",
        lambda p: range_of(p, with_stats=True),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "86.7 to 100% (spread 13.3 points; mean 95.3, sd 4.8)",
        f"{ROBUST}/spread-select.json",
        lambda p: range_of(p, with_stats=True),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "66.7, 88.3, 86.7, 80.0 and 98.3% at steps 90",
        f"{ROBUST}/d0-t1-candidates.json",
        candidates_line,
    ),
    *(
        Claim("experiments/toy_paradox/README.md", quote, ROBUST, robust_row(name))
        for name, quote in [
            ("d0-t1", "| 1 | 0 | 66.7% | 120 (93.3%) | 86.7% | **96.7%** | 0% | 96.7% |"),
            ("d0-t2", "| 2 | 0 | 98.3% | 105 (100%) | 96.7% | **100%** | 0% | 100% |"),
            ("d1-t1", "| 1 | 1 | 96.7% | 135 (100%) | 96.7% | **100%** | 0% | 100% |"),
            ("d1-t2", "| 2 | 1 | 98.3% | 105 (100%) | 100% | **100%** | 0% | 100% |"),
            ("d2-t1", "| 1 | 2 | 93.3% | 105 (100%) | 93.3% | **100%** | 0% | 100% |"),
            ("d2-t2", "| 2 | 2 | 96.7% | 105 (100%) | 98.3% | **100%** | 0% | 100% |"),
        ]
    ),
    Claim(
        "docs/TOY_TASK.md",
        "six builds (data seeds 0–2, 1 and 2 threads) score 96.7 to 100%",
        f"{ROBUST}/spread-average.json",
        lambda p: "six builds (data seeds 0–2, 1 and 2 threads) score {:g} to {:g}%".format(
            _json(p)["stages"][SFT_K4]["min"], _json(p)["stages"][SFT_K4]["max"]
        ),
    ),
    # README.md: the main command's model and what it does on held-out videos
    Claim(
        "README.md",
        "names the right colour on 60 of 60 of them (the toy eval split, "
        "`experiments/toy_paradox/results/demo-eval/`)",
        DEMO_EVAL,
        lambda p: right_of(p, " of "),
    ),
    Claim(
        "README.md",
        "it sweeps every held-out video this way",
        DEMO_EVAL,
        lambda p: "sweeps every" if _json(p)["metrics"]["tools"]["usage_rate"] == 1.0 else "?",
    ),
    Claim(
        "README.md",
        "decides on five `crop_video` calls",
        DEMO_EVAL,
        lambda p: WORDS[round(_json(p)["metrics"]["tools"]["avg_calls"])],
    ),
    Claim(
        "README.md",
        "it sees 4 overview frames",
        "src/paravt/toy/demo_model/demo.yaml",
        lambda p: f"sees {yaml.safe_load(p.read_text())['engine']['frames']} overview",
    ),
    Claim(
        "README.md",
        "the 5.5 M-parameter Qwen3-VL",
        "src/paravt/toy/demo_model/demo.yaml",
        lambda p: f"{yaml.safe_load(p.read_text())['parameters'] / 1e6:.1f} M",
    ),
    Claim(
        "README.md",
        "it answers with the colour the windows showed (red;",
        f"{TOY}/demo-eval/seeds-0-39.jsonl",  # seed 4 is the main command's video
        lambda p: next(f"({r['answer']};" for r in _lines(p) if r["seed"] == 4 and r["acc"] == 1),
    ),
    Claim(
        "README.md",
        "(11 MB, shipped in the package",
        "src/paravt/toy/demo_model",
        lambda p: f"({sum(f.stat().st_size for f in p.iterdir()) / 1e6:.0f} MB,",
    ),
    Claim(
        "docs/TOY_TASK.md",
        "`pip install -e .` and a normal install both carry it; 11.1 MB)",
        "src/paravt/toy/demo_model",
        lambda p: f"{sum(f.stat().st_size for f in p.iterdir()) / 1e6:.1f} MB)",
    ),
    # experiments/toy_paradox/README.md, "Where it stands"
    Claim(
        "experiments/toy_paradox/README.md",
        "**98.3%** (59 / 60; `results/quick-text/`, 90 tool-SFT steps)",
        summary("quick-text/eval/sft-strong-4"),
        lambda p: f"**{pct(accuracy(p))}** ({right_of(p)}",
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "100% at 100 steps, 76.7% at 270",
        summary("quick-text-100/eval/sft-strong-4"),
        lambda p: f"{pct(accuracy(p))} at 100",
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "100% at 100 steps, 76.7% at 270",
        summary("quick-text-270/eval/sft-strong-4"),
        lambda p: f"{pct(accuracy(p))} at 270",
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "**66.7%** (40 / 60), one and the same model",
        summary("quick-rebuild/build-1/eval/sft-strong-4"),
        lambda p: f"**{pct(accuracy(p))}** ({right_of(p)})",
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "**66.7%** (40 / 60), one and the same model",
        summary("quick-rebuild/build-2/eval/sft-strong-4"),
        lambda p: f"**{pct(accuracy(p))}** ({right_of(p)})",
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "`--mode direct` ≤ 40% | 0% (0 / 60), build `6c40568`",
        summary("quick-text/eval/sft-strong-4-direct"),
        lambda p: f"{pct(accuracy(p))} ({right_of(p)})",
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "tool use 100%, 5.0 calls a question in both builds",
        summary("quick-text/eval/sft-strong-4"),
        lambda p: (
            f"tool use {pct(_json(p)['metrics']['tools']['usage_rate'])}, "
            f"{_json(p)['metrics']['tools']['avg_calls']:.1f} calls"
        ),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "716 s (11.9 min), build `6c40568`",
        f"{TOY}/quick-text/results.json",
        lambda p: (
            f"{_json(p)['wall_seconds_this_invocation']:.0f} s "
            f"({_json(p)['wall_seconds_this_invocation'] / 60:.1f} min)"
        ),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "16.7% → 96.7% (seed 0) and 95.0% (seed 1), **+79.2 points**",
        f"{TOY}/rl-weak-text/eval",
        lambda p: "{} → {} (seed 0) and {:.1f}% (seed 1), **+{:.1f} points**".format(
            pct(accuracy(p / "sft-weak-4/summary.json")),
            pct(accuracy(p / "rl-weak-paragrpo-s0-4/summary.json")),
            100 * accuracy(p / "rl-weak-paragrpo-s1-4/summary.json"),
            100
            * (
                (
                    accuracy(p / "rl-weak-paragrpo-s0-4/summary.json")
                    + accuracy(p / "rl-weak-paragrpo-s1-4/summary.json")
                )
                / 2
                - accuracy(p / "sft-weak-4/summary.json")
            ),
        ),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "vanilla GRPO from the same checkpoint: 1.7% and 16.7% (tool use 0%)",
        f"{TOY}/rl-weak-text/eval",
        lambda p: "{} and {}".format(
            pct(accuracy(p / "rl-weak-vanilla_grpo-s0-4/summary.json")),
            pct(accuracy(p / "rl-weak-vanilla_grpo-s1-4/summary.json")),
        ),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "K = 4 **80.6%** [70.0, 89.4] with vLLM against **81.1%** [70.0, 91.1] with hf",
        f"{TOY}/samplers-3x3/sampler_compare.json",
        lambda p: "**{}** [{:.1f}, {:.1f}] with vLLM against **{}** [{:.1f}, {:.1f}]".format(
            pct(_json(p)["k4"]["vllm"]["mean"]),
            *(100 * x for x in _json(p)["k4"]["vllm"]["ci95"]),
            pct(_json(p)["k4"]["hf"]["mean"]),
            *(100 * x for x in _json(p)["k4"]["hf"]["ci95"]),
        ),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "40 / 40 (100%) on the 100-step quick SFT model",
        "benchmarks/results/bench_backend_agreement.json",
        lambda p: f"{_json(p)['same']} / {_json(p)['n']} ({pct(_json(p)['agreement'])})",
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "PARA-GRPO 93.3% → 95.0% / 95.0% at K = 4; vanilla keeps calling but breaks "
        "(41.7% / 16.7%, one constant colour); `anchor_only` 96.7%, `gating_only` 15.0%",
        f"{TOY}/rl-strong-text/eval",
        lambda p: (
            "PARA-GRPO {} → {:.1f}% / {:.1f}% at K = 4; vanilla keeps calling but breaks ({} / {}, "
            "one constant colour); `anchor_only` {}, `gating_only` {:.1f}%"
        ).format(
            pct(accuracy(p / "sft-strong-4/summary.json")),
            100 * accuracy(p / "rl-strong-paragrpo-s0-4/summary.json"),
            100 * accuracy(p / "rl-strong-paragrpo-s1-4/summary.json"),
            pct(accuracy(p / "rl-strong-vanilla_grpo-s0-4/summary.json")),
            pct(accuracy(p / "rl-strong-vanilla_grpo-s1-4/summary.json")),
            pct(accuracy(p / "rl-strong-anchor_only-s0-4/summary.json")),
            100 * accuracy(p / "rl-strong-gating_only-s0-4/summary.json"),
        ),
    ),
    # the paradox table over three seeds (results/paradox-3seeds/): its rows, then the differences
    *(
        Claim("experiments/toy_paradox/README.md", quote, PARADOX, make(recipe))
        for make, recipe, quote in [
            (
                paradox_row,
                "vanilla_grpo",
                "| vanilla GRPO | 19.4 [7.5, 31.4] | 95.8 [95.8, 95.8] | 6.7 [-22.0, 35.4] | 0.0 [0.0, 0.0] | 16.7 [-39.7, 73.0] | 0.15 |",
            ),
            (
                paradox_row,
                "anchor_only",
                "| anchoring only | 16.7 [16.7, 16.7] | 79.2 [-10.5, 168.8] | 0.0 [0.0, 0.0] | 100.0 [100.0, 100.0] | 80.4 [48.5, 112.3] | 0.90 |",
            ),
            (
                paradox_row,
                "gating_only",
                "| gating only | 17.8 [13.0, 22.6] | 97.2 [91.2, 103.2] | 0.0 [0.0, 0.0] | 0.0 [0.0, 0.0] | 60.4 [39.7, 81.1] | 0.21 |",
            ),
            (
                paradox_row,
                "paragrpo",
                "| PARA-GRPO | 81.1 [6.9, 155.3] | 94.4 [70.5, 118.3] | 100.0 [100.0, 100.0] | 100.0 [100.0, 100.0] | 78.3 [49.5, 107.2] | 0.96 |",
            ),
            (
                paradox_gaps,
                "anchor_only",
                "| anchoring only | -2.8 | [-10.5, 4.9] | [-14.7, 9.2] | -6.7 | [-25.2, 11.8] | [-35.4, 22.0] |",
            ),
            (
                paradox_gaps,
                "gating_only",
                "| gating only | -1.7 | [-10.0, 6.6] | [-16.6, 13.3] | -6.7 | [-25.2, 11.8] | [-35.4, 22.0] |",
            ),
            (
                paradox_gaps,
                "paragrpo",
                "| PARA-GRPO | +61.7 | [13.2, 110.2] | [-24.5, 147.8] | +93.3 | [74.8, 111.8] | [64.6, 122.0] |",
            ),
        ]
    ),  # fmt: skip
    Claim(
        "experiments/toy_paradox/README.md",
        "PARA-GRPO 46.7, 100.0 and 96.7; vanilla GRPO 25.0, 16.7 and 16.7; anchoring only 16.7 "
        "in all three; gating only 16.7, 20.0 and 16.7",
        PARADOX,
        paradox_seeds,
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "K = 4 accuracy PARA-GRPO **81.1** [6.9, 155.3] against vanilla 19.4 [7.5, 31.4], "
        "anchoring only 16.7, gating only 17.8; tool use at K = 4 100% against 0-7%; PARA-GRPO "
        "minus vanilla +61.7 points, unpaired interval [13.2, 110.2]",
        PARADOX,
        paradox_status,
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "12-step runs then took 6-20 min of training each",
        f"{TOY}/paradox-3seeds/results.json",
        lambda p: "took {:.0f}-{:.0f} min".format(
            *(
                f(v["seconds"] for k, v in _json(p)["commands"].items() if k.startswith("rl-")) / 60
                for f in (min, max)
            )
        ),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "rarely calls (tool use 20, 0 and 0%)",
        PARADOX,
        lambda p: "(tool use {:.0f}, {:.0f} and {:.0f}%)".format(
            *_json(p)["table"]["vanilla_grpo"]["tool_use_k4"]["seeds"]["values"]
        ),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "at K = 64 one seed broke\n  (37.5%)",
        PARADOX,
        lambda p: f"({min(_json(p)['table']['anchor_only']['acc_k64']['seeds']['values']):.1f}%)",
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "widens the paired interval to ±86 points",
        PARADOX,
        lambda p: "±{:.0f} points".format(
            _json(p)["table"]["paragrpo"]["acc_k4"]["minus_vanilla_grpo"]["paired"]["half_width"]
        ),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "is about 8 points between the two ablations and vanilla (their seeds agree), and 48.5 "
        "points between PARA-GRPO and vanilla",
        PARADOX,
        paradox_detectable,
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "Both against PARA-GRPO at K = 4: -64.4 and -63.3 points",
        PARADOX,
        lambda p: "{:.1f} and {:.1f} points".format(
            *(
                _json(p)["table"][r]["acc_k4"]["minus_paragrpo"]["unpaired"]["mean"]
                for r in ("anchor_only", "gating_only")
            )
        ),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "(637 s; K = 4 16.7%, K = 64 95.8%, tool use 0% at both)",
        f"{TOY}/paradox-3seeds",
        lambda p: "({:.0f} s; K = 4 {}, K = 64 {}".format(
            _json(p / "results.json")["commands"]["sft-weak"]["seconds"],
            pct(accuracy(p / "eval/sft-weak-4/summary.json")),
            pct(accuracy(p / "eval/sft-weak-64/summary.json")),
        ),
    ),
    # the shipped demo, on held-out videos and the eval split
    Claim(
        "experiments/toy_paradox/README.md",
        "**20 of 20** held-out videos (seeds 1000–1019",
        f"{TOY}/demo-eval/seeds-1000-1019.jsonl",
        lambda p: f"**{seeds_right(1000, 1020)(p)} of 20**",
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "60 / 60 on the eval split (`results/demo-eval/`)",
        DEMO_EVAL,
        right_of,
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "0–39 (20 of 0–19, 19 of 20–39; `results/demo-eval/seeds-0-39.jsonl`)",
        f"{TOY}/demo-eval/seeds-0-39.jsonl",
        lambda p: f"({seeds_right(0, 20)(p)} of 0–19, {seeds_right(20, 40)(p)} of 20–39;",
    ),
    # the demo it replaced (4 to 6 Dec), on the same sets
    Claim(
        "experiments/toy_paradox/README.md",
        "the 90-step 2-thread build it replaced: 18 of 20 and 59 / 60",
        f"{TOY}/demo-eval-16a55e9",
        lambda p: "{} of 20 and {}".format(
            seeds_right(1000, 1020)(p / "seeds-1000-1019.jsonl"),
            right_of(p / "eval/demo-fp16-4/summary.json"),
        ),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "**18 of 20** held-out seeds, 1000–1019 (misses: seed",
        f"{TOY}/demo-eval-16a55e9/seeds-1000-1019.jsonl",
        lambda p: f"**{seeds_right(1000, 1020)(p)} of 20**",
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "20 of seeds 0–19 and 19 of 20–39 (seed 33",
        f"{TOY}/demo-eval-16a55e9/seeds-0-39.jsonl",
        lambda p: f"{seeds_right(0, 20)(p)} of seeds 0–19 and {seeds_right(20, 40)(p)} of 20–39",
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "the 1-thread build before that: 16, 12 and 40 / 60",
        f"{TOY}/demo-eval-8326dad",
        lambda p: "{}, {} and {}".format(
            seeds_right(0, 20)(p / "seeds-0-39.jsonl"),
            seeds_right(20, 40)(p / "seeds-0-39.jsonl"),
            right_of(p / "eval/demo-fp16-4/summary.json"),
        ),
    ),
    # docs/TOY_TASK.md
    Claim(
        "docs/TOY_TASK.md",
        "20 of 20 (`experiments/toy_paradox/results/demo-eval/seeds-1000-1019.jsonl`)",
        f"{TOY}/demo-eval/seeds-1000-1019.jsonl",
        lambda p: f"{seeds_right(1000, 1020)(p)} of 20",
    ),
    Claim(
        "docs/TOY_TASK.md",
        "41.7% with letter answers (`experiments/toy_paradox/results/quick-restated/`)",
        summary("quick-restated/eval/sft-strong-4"),
        lambda p: pct(accuracy(p)),
    ),
    Claim(
        "docs/TOY_TASK.md",
        "to 76.7% with the colour's text (`results/quick-text-270/`)",
        summary("quick-text-270/eval/sft-strong-4"),
        lambda p: pct(accuracy(p)),
    ),
    Claim(
        "docs/TOY_TASK.md",
        "at 90 steps the text form gives 98.3% (`results/quick-text/`)",
        summary("quick-text/eval/sft-strong-4"),
        lambda p: pct(accuracy(p)),
    ),
    Claim(
        "docs/TOY_TASK.md",
        "fp32 model 100% (60 / 60), fp16 demo 100% (60 / 60)",
        "src/paravt/toy/demo_model/demo.yaml",
        lambda p: "fp32 model {}, fp16 demo {}".format(
            *(
                f"{pct(e['accuracy'])} ({round(e['accuracy'] * e['n'])} / {e['n']})"
                for e in (yaml.safe_load(p.read_text())["eval"][k] for k in ("fp32", "fp16"))
            )
        ),
    ),
    *(
        Claim("docs/TOY_TASK.md", row, "benchmarks/results/bench_toy_oracle.json", oracle_row(*key))
        for key, row in [
            ((4, 1, 0), "| 4 | 1 | 0 | 100% | 0.79 | 100% | 1.00 | 1.00 | 0 |"),
            ((4, 0, 0), "| 4 | 0 | 0 | 32% | 0.09 | 10% | 1.00 | 0 | 0 |"),
            ((64, 0, 0), "| 64 | 0 | 0 | 100% | 0.77 | 95% | 1.00 | 0 | 0 |"),
            ((64, 1, 0), "| 64 | 1 | 0 | 100% | 0.83 | 100% | 1.00 | 1.00 | 0 |"),
            ((4, 1, 1), "| 4 | 1 | 1 | 92% | 0.73 | 92% | 0.87 | 1.00 | 94 |"),
        ]
    ),
    *(
        Claim("docs/TOY_TASK.md", row, f"{TOY}/task-visibility/task.json", visibility_row(k))
        for k, row in [
            (4, "| 4 | 10.3% | 8.2% |"),
            (8, "| 8 | 15.9% | 16.4% |"),
            (16, "| 16 | 32.0% | 32.8% |"),
            (32, "| 32 | 67.8% | 65.6% |"),
            (64, "| 64 | 100% | 100% |"),
        ]
    ),
    Claim(
        "docs/TOY_TASK.md",
        "1,000 videos in 50.8 s (19.7 videos/s), and the visibility measurement over all 1,000 in "
        "68.8 s",
        f"{TOY}/task-visibility/task.json",
        lambda p: (
            "{} videos in {:.1f} s ({} videos/s), and the visibility measurement over all "
            "1,000 in {:.1f} s".format(
                f"{_json(p)['splits']['train']['videos']:,}",
                _json(p)["splits"]["train"]["generate_seconds"],
                _json(p)["splits"]["train"]["videos_per_second"],
                _json(p)["splits"]["train"]["visibility_seconds"],
            )
        ),
    ),
    # steps an hour at max_staleness k: benchmarks/README.md's summary and table
    *(
        Claim("benchmarks/README.md", row, ASYNC_STEPS, async_row(k))
        for k, row in [
            (0, "| 0 | 116.1 | 1.00 | 31.0 | 3.76 | 27.2 | - | 0 / 0 | 120 |"),
            (1, "| 1 | 139.3 | **1.20** | 25.8 | 0.02 | 25.8 | 3.63 | 0.83 / 1 | 91 |"),
            (2, "| 2 | 138.6 | **1.19** | 26.0 | 0.02 | 26.0 | 3.63 | 1.5 / 2 | 111 |"),
        ]
    ),
    Claim("benchmarks/README.md", "L + R_cpu)) = **1.13×**", ASYNC_STEPS, async_bound),
    Claim(
        "benchmarks/README.md", "116, 139 and 139, so k = 2 is 1.19×", ASYNC_STEPS, async_steps_line
    ),
    Claim("benchmarks/README.md", "bounds the gain at 1.13×", ASYNC_STEPS, async_bound),
    Claim("benchmarks/README.md", "path (3.8 s → 0.02 s a", ASYNC_STEPS, async_segments),
    # docs/INFER.md, the memory table
    *(
        Claim("docs/INFER.md", quote, f"benchmarks/results/{source}", peak_rss(label, batch))
        for quote, source, label, batch in [
            (
                "| 16 | 8 / 8 | 4.97 GB |",
                "bench_infer_memory_k16_smoke.json",
                "before (main befe118)",
                8,
            ),
            (
                "| 16 | 8 / 8 | 1.58 GB |",
                "bench_infer_memory_k16_smoke.json",
                "after (bench branch dd3f36b)",
                8,
            ),
            ("| 64 | 8 / 8 | **3.15 GB** |", "bench_infer_memory_k64.json", "after", 8),
            ("| 64 | 8 / 1 | 10.13 GB |", "bench_infer_memory_k64.json", "after", 1),
            (
                "| 64 | 8 / 1 | **4.22 GB** |",
                "bench_infer_memory_k64.json",
                "keep_pixels=False (records drop their rows)",
                1,
            ),
        ]
    ),  # fmt: skip
    # k = 0 against k = 2 through a vLLM server, three seeds (results/server-staleness-3seeds/)
    *(
        Claim("experiments/toy_paradox/README.md", quote, STALENESS, staleness_row(key, decimals))
        for key, decimals, quote in [
            (
                "acc_k4",
                1,
                "| accuracy at K = 4 (60 q) | 86.1 [67.0, 105.2] | 86.1 [67.0, 105.2] | +0.0 [-33.1, 33.1] | yes |",
            ),
            (
                "acc_k64",
                1,
                "| accuracy at K = 64 (24 q) | 100.0 [100.0, 100.0] | 97.2 [91.2, 103.2] | -2.8 [-8.8, 3.2] | yes |",
            ),
            (
                "tool_use_k4",
                1,
                "| tool use at K = 4 | 98.9 [94.1, 103.7] | 100.0 [100.0, 100.0] | +1.1 [-3.7, 5.9] | yes |",
            ),
            (
                "tool_use_k64",
                1,
                "| tool use at K = 64 | 48.6 [-65.9, 163.1] | 63.9 [51.9, 75.8] | +15.3 [-101.1, 131.6] | yes |",
            ),
            (
                "kappa_last5",
                1,
                "| κ, training, last 5 steps | 54.6 [26.4, 82.8] | 55.4 [8.7, 102.1] | +0.8 [-33.4, 35.0] | yes |",
            ),
            (
                "r_fmt_last5",
                2,
                "| R_fmt, last 5 steps | 0.94 [0.88, 1.01] | 0.98 [0.96, 1.00] | +0.04 [-0.02, 0.09] | yes |",
            ),
        ]
    ),  # fmt: skip
    *(
        Claim("experiments/toy_paradox/README.md", quote, STALENESS, staleness_seeds(key))
        for key, quote in [
            ("acc_k4", "accuracy at K = 4: k = 0 81.7, 81.7, 95.0; k = 2 95.0, 81.7, 81.7"),
            ("acc_k64", "k = 0 100.0, 100.0, 100.0; k = 2 100.0, 95.8, 95.8"),
        ]
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "K = 4 accuracy **86.1** [67.0, 105.2] at both k; K = 64 100.0 against 97.2 [91.2, "
        "103.2]; k = 2 − k = 0 paired +0.0 [-33.1, 33.1] at K = 4 (the smallest gap it can tell: "
        "33.1 points)",
        STALENESS,
        staleness_status,
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "33.1 points at K = 4 (the seeds trade places: k = 2 is ahead on seed 0 and behind on seed "
        "2 by the same 13.3 points) and 6.0 at K = 64",
        STALENESS,
        staleness_detectable,
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "the staleness consumed was 1.75 steps on average and 2 at most",
        STALENESS,
        lambda p: "was {:.2f} steps on average and {:.0f} at most".format(
            _json(p)["summary"]["staleness_mean"]["k2"]["mean"],
            _json(p)["summary"]["staleness_max"]["k2"]["mean"],
        ),
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "The importance-weight truncation touched 0.02% of the tokens on average (0.10% in the "
        "worst step; 10 of 36 steps touched any)",
        f"{TOY}/server-staleness-3seeds",
        staleness_truncation,
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "Here a think left open in the answer turn counts k = 0: 2 of 180 at K = 4 and 0 of 72 at "
        "K = 64; k = 2: 0 of 180 and 1 of 72.",
        STALENESS,
        staleness_open_thinks,
    ),
    Claim(
        "experiments/toy_paradox/README.md",
        "k = 2 trained in 1160 s over its three runs against 1704 s for k = 0 (0.68×)",
        f"{TOY}/server-staleness-3seeds/results.json",
        staleness_seconds,
    ),
]
