"""The two samplers side by side: accuracy over seeds, and vLLM - hf paired by seed and Welch.

Reads a results folder (a run's OUT, or its slimmed copy under ``results/``): for each sampler
and seed, the eval of the RL run ``rl-{prior}-{recipe}[-vllm]-s{seed}`` at each K (its
``answers.json``, else its ``results.jsonl`` scored by the robust reading), the tool use of
that eval (``summary.json``) and the run's per-step log (``*-metrics.jsonl`` beside the evals,
or ``runs/<run>/metrics.jsonl``): the KL and the sampler-learner log-prob difference over the
last five steps. For each K: each seed's accuracy (in %, over its questions), each sampler's
mean over seeds with a 95% t-interval (the seed is the unit: the questions of one run are not
independent draws of its training), and vLLM - hf (``intervals.compare``): paired by seed (the
same trainer seed draws the same prompts and K for both samplers) and Welch, with the smallest
gap a paired test over these seeds finds with 80% power. One JSON object on stdout. Why: two
seeds a sampler left an 8-point gap that seed noise alone could explain; an interval says
whether a gap is larger than that noise (LOG.md, "The two samplers"). It resampled questions
before 7 Dec 2026, which treats the 60 answers of one trained model as 60 draws of training.

    python experiments/toy_paradox/probes/sampler_compare.py RESULTS --seeds 0 1 2 > compare.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from intervals import INTERVALS, compare, t_interval

#: the sampler -> the infix of its run names (``run``'s naming: ``weak-paragrpo-vllm-s0``)
SAMPLERS = {"hf": "", "vllm": "-vllm"}
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


def compare_k(tables: dict[str, list[float]]) -> dict:
    """Mean over seeds with its interval per sampler, and vLLM - hf (tables: sampler -> each
    seed's accuracy in %)."""
    out: dict = {s: t_interval(values) for s, values in tables.items()}
    if set(tables) == set(SAMPLERS):
        out["vllm_minus_hf"] = compare(tables["hf"], tables["vllm"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="OUT of the runs, or their slimmed results folder")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--run", default="weak-paragrpo", help="prior-recipe of the RL runs")
    ap.add_argument("--ks", nargs="+", type=int, default=[4, 64])
    args = ap.parse_args()
    evals = args.folder / "eval"
    report: dict = {"folder": args.folder.name, "seeds": args.seeds, "interval": INTERVALS}
    for k in args.ks:
        tables, questions = {}, set()
        for sampler, infix in SAMPLERS.items():
            seeds = []
            for seed in args.seeds:
                folder = evals / f"rl-{args.run}{infix}-s{seed}-{k}"
                if folder.is_dir():
                    right = correct_vector(folder)
                    questions.add(len(right))
                    seeds.append(100 * sum(right.values()) / len(right))
            if seeds:
                tables[sampler] = seeds
        report[f"k{k}"] = {"questions": sorted(questions), **compare_k(tables)} if tables else None
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
