"""The registry of numbers the docs quote from runs, each tied to the committed file it comes from.

Every entry says where the number is written (a doc and a quote from it, whitespace as in the
text but line breaks free), which committed file holds it, and how to compute the quoted text
from that file. ``tests/test_claims.py`` recomputes each one; a doc that drifts from its file, or
cites a file that is not committed, fails there. Add a claim here when a doc quotes a new number
from a run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import yaml
from claimkit import REPO, TOY, Claim, accuracy, pct, read_json, read_lines, right_of
from claims_guide import CLAIMS as GUIDE_CLAIMS
from claims_toy import CLAIMS as TOY_CLAIMS

# the toy experiment's probes compute the numbers from the raw files (the claims run the same
# code on the committed files); their folder is not a package
sys.path.insert(0, str(REPO / "experiments/toy_paradox/probes"))

DEMO_EVAL = f"{TOY}/demo-eval/eval/demo-fp16-4/summary.json"
WORDS = {4: "four", 5: "five"}
_json, _lines = read_json, read_lines


# --------------------------------------------------------------------------- readers


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


#: the paradox table's columns: paradox_table.json's numbers, in the README's order


#: the paradox table's row names in the README, by recipe


CLAIMS = [
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
        "`toy` (5.5 M parameters) for the toy task",
        "src/paravt/toy/demo_model/demo.yaml",
        lambda p: f"{yaml.safe_load(p.read_text())['parameters'] / 1e6:.1f} M",
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
]

# the toy experiment's lab log (experiments/toy_paradox/LOG.md) and its guide (the README beside it)
CLAIMS += TOY_CLAIMS
CLAIMS += GUIDE_CLAIMS
