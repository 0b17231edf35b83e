"""The two samplers side by side: accuracy with a 95% bootstrap interval over questions x seeds.

Reads a results folder (a run's OUT, or its slimmed copy under ``results/``): for each sampler
and seed, the eval of the RL run ``rl-{prior}-{recipe}[-vllm]-s{seed}`` at each K (its
``answers.json``, else its ``results.jsonl`` scored by the robust reading), the tool use of
that eval (``summary.json``) and the run's per-step log (``*-metrics.jsonl`` beside the evals,
or ``runs/<run>/metrics.jsonl``): the KL and the sampler-learner log-prob difference over the
last five steps. For each K it writes the mean accuracy over seeds and questions with a
percentile bootstrap interval (seeds and questions resampled with replacement), and the
difference vLLM - hf with its own interval (questions resampled jointly, seeds per sampler).
One JSON object on stdout. Why: two seeds a sampler left an 8-point gap that seed noise alone
could explain; an interval says whether a gap is larger than that noise (README, "The two
samplers").

    python experiments/toy_paradox/probes/sampler_compare.py RESULTS --seeds 0 1 2 > compare.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

#: the sampler -> the infix of its run names (``run``'s naming: ``weak-paragrpo-vllm-s0``)
SAMPLERS = {"hf": "", "vllm": "-vllm"}
#: bootstrap resamples, and the generator's seed (the interval is then reproducible)
RESAMPLES = 10_000
BOOT_SEED = 0
#: the per-step log's last steps whose mean is reported
LAST_STEPS = 5


def correct_vector(eval_dir: Path) -> dict[str, float]:
    """Question id -> 1.0 right / 0.0 wrong, from answers.json or the raw results.jsonl."""
    answers = eval_dir / "answers.json"
    if answers.is_file():
        data = json.loads(answers.read_text())
        cols = data["columns"]
        return {q[cols.index("id")]: float(q[cols.index("correct")]) for q in data["questions"]}
    rows = [json.loads(x) for x in (eval_dir / "results.jsonl").read_text().splitlines()]
    return {r["id"]: float((r.get("score") or {}).get("correct") == 1.0) for r in rows}


def tool_use(eval_dir: Path) -> float:
    summary = json.loads((eval_dir / "summary.json").read_text())
    return summary["metrics"]["tools"]["usage_rate"]


def run_log(folder: Path, run: str) -> list[dict]:
    for path in (
        folder / f"rl-{run}-metrics.jsonl",
        folder / "runs" / f"rl-{run}" / "metrics.jsonl",
    ):
        if path.is_file():
            rows = [json.loads(x) for x in path.read_text().splitlines()]
            return [r for r in rows if "reward/acc" in r]
    return []


def last_mean(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows[-LAST_STEPS:] if r.get(key) is not None]
    return sum(values) / len(values) if values else None


def resample_mean(rng: random.Random, table: list[list[float]], questions: list[int]) -> float:
    """The mean over seeds drawn with replacement from ``table`` and the given questions."""
    seeds = [rng.randrange(len(table)) for _ in table]
    return sum(table[s][q] for s in seeds for q in questions) / (len(seeds) * len(questions))


def interval(values: list[float]) -> list[float]:
    values = sorted(values)
    return [values[int(0.025 * len(values))], values[int(0.975 * len(values)) - 1]]


def compare_k(tables: dict[str, list[list[float]]]) -> dict:
    """Mean, interval and the vLLM - hf difference for one K (tables: sampler -> seed x q)."""
    rng = random.Random(BOOT_SEED)
    n_q = len(next(iter(tables.values()))[0])
    boots: dict[str, list[float]] = {s: [] for s in tables}
    diffs = []
    for _ in range(RESAMPLES):
        questions = [rng.randrange(n_q) for _ in range(n_q)]
        means = {s: resample_mean(rng, t, questions) for s, t in tables.items()}
        for s, m in means.items():
            boots[s].append(m)
        if set(means) == set(SAMPLERS):
            diffs.append(means["vllm"] - means["hf"])
    out = {
        s: {
            "mean": sum(map(sum, t)) / (len(t) * n_q),
            "ci95": interval(boots[s]),
            "per_seed": [sum(row) / n_q for row in t],
        }
        for s, t in tables.items()
    }
    if diffs:
        low, high = interval(diffs)
        out["vllm_minus_hf"] = {
            "mean": out["vllm"]["mean"] - out["hf"]["mean"],
            "ci95": [low, high],
            "contains_zero": low <= 0.0 <= high,
        }
        a, b = out["hf"]["ci95"], out["vllm"]["ci95"]
        out["intervals_overlap"] = a[0] <= b[1] and b[0] <= a[1]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="OUT of the runs, or their slimmed results folder")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--run", default="weak-paragrpo", help="prior-recipe of the RL runs")
    ap.add_argument("--ks", nargs="+", type=int, default=[4, 64])
    args = ap.parse_args()
    evals = args.folder / "eval"
    report: dict = {"folder": args.folder.name, "seeds": args.seeds, "resamples": RESAMPLES}
    for k in args.ks:
        tables, ids = {}, None
        for sampler, infix in SAMPLERS.items():
            rows = []
            for seed in args.seeds:
                folder = evals / f"rl-{args.run}{infix}-s{seed}-{k}"
                if not folder.is_dir():
                    continue
                vec = correct_vector(folder)
                ids = ids or sorted(vec)
                rows.append([vec[i] for i in ids])
            if rows:
                tables[sampler] = rows
        report[f"k{k}"] = {"questions": len(ids or []), **compare_k(tables)} if tables else None
    runs = {}
    for infix in SAMPLERS.values():
        for seed in args.seeds:
            run = f"{args.run}{infix}-s{seed}"
            log = run_log(args.folder, run)
            tools = {
                k: tool_use(evals / f"rl-{run}-{k}")
                for k in args.ks
                if (evals / f"rl-{run}-{k}" / "summary.json").is_file()
            }
            runs[run] = {
                "steps": len(log),
                "kl_last": last_mean(log, "kl"),
                "logp_gap_last": last_mean(log, "sampling/sampling_logp_difference/mean"),
                "kappa_last": last_mean(log, "tools/kappa"),
                "train_acc_last": last_mean(log, "reward/acc"),
                "eval_tool_use": tools,
            }
    report["runs"] = runs
    json.dump(report, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
