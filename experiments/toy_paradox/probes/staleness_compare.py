"""k = 0 against k = K through one vLLM server: the learning numbers with t-intervals over seeds.

Reads a results folder (a run's OUT, or its slimmed copy under ``results/``) holding the runs
``rl-{prior}-{recipe}-server-k{k}-s{seed}`` (``run --sampler server --max-staleness k``). For each
run: accuracy at each K and tool use (its evals' ``answers.json`` / ``results.jsonl`` and
``summary.json``), the answer turns left with a think open (``results.jsonl``, or the count
``slim.py`` keeps in ``answers.json``), R_fmt (the trainer's ``reward/fmt``: the mean over the last five steps and over
the run) and κ (``tools/kappa``, the share of episodes with a call, in %, last five steps), the
steps trained, the staleness it consumed (``async/staleness_mean`` averaged over steps,
``async/staleness_max`` the largest), the seconds a step took (``step_time``) and the seconds the
learner waited for its rollout (``async/wait_s``). For each number: the mean over seeds with a 95%
t-interval over the seed means (the seed is the unit: questions within a seed are not independent
draws of the training), and the difference k = K minus k = 0 (``intervals.compare``): paired
by seed (same seed, same checkpoint, same prompts and K) and Welch (unequal variances), a
difference being claimed only where both exclude 0, with the smallest gap a paired test over
these seeds finds with 80% power (``detectable_paired``).

    python experiments/toy_paradox/probes/staleness_compare.py RESULTS --ks 0 2 --seeds 0 1 2

One JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from answers import open_think
from intervals import INTERVALS, compare, t_interval
from sampler_compare import correct_vector, run_log, tool_use


#: the per-step log's last steps whose R_fmt mean is reported
LAST_STEPS = 5
#: the evals of an RL run: (tag, K) as ``run`` names their folders (``eval/rl-NAME-K``)
EVALS = (("k4", 4), ("k64", 64))


def open_thinks(ev: Path) -> int | None:
    """How many answer turns leave a think open, by the reward's own rule (the collapse the 5 Dec
    two-seed runs showed at K = 64 after a tool turn): from the raw ``results.jsonl``, else
    the count ``slim.py`` kept in ``answers.json`` (None where neither holds it)."""
    results, kept = ev / "results.jsonl", ev / "answers.json"
    if results.is_file():
        turns = (json.loads(line).get("prediction") or "" for line in results.read_text().splitlines())
        return sum(open_think(t) for t in turns)
    if kept.is_file():
        return json.loads(kept.read_text()).get("open_think")
    return None


def run_numbers(folder: Path, run: str, results: dict) -> dict:
    """One run's learning and staleness numbers (module doc)."""
    out: dict = {}
    for tag, k in EVALS:
        ev = folder / "eval" / f"rl-{run}-{k}"
        if ev.is_dir():
            right = correct_vector(ev)
            out[f"acc_{tag}"] = 100 * statistics.fmean(right.values())
            out[f"tool_use_{tag}"] = 100 * tool_use(ev)
            if (count := open_thinks(ev)) is not None:
                out[f"open_think_{tag}"] = count
    log = run_log(folder, run)
    fmt = [r["reward/fmt"] for r in log]
    out.update(
        steps=len(log),
        r_fmt_last5=statistics.fmean(fmt[-LAST_STEPS:]),
        r_fmt_mean=statistics.fmean(fmt),
        staleness_mean=statistics.fmean(r.get("async/staleness_mean", 0.0) for r in log),
        staleness_max=max(r.get("async/staleness_max", 0.0) for r in log),
        share_one_or_more_back=statistics.fmean(
            r.get("async/share_one_or_more_back", 0.0) for r in log
        ),
        groups_dropped=sum(r.get("async/groups_dropped", 0.0) for r in log),
        step_time_s=statistics.fmean(r["step_time"] for r in log),
        wait_s=statistics.fmean(r.get("async/wait_s", 0.0) for r in log),
        push_s=statistics.fmean(r.get("async/push_s", 0.0) for r in log),
        is_truncated_share=statistics.fmean(
            r.get("sampling/importance_sampling_ratio/truncated_share", 0.0) for r in log
        ),
        kl_last5=statistics.fmean(r.get("kl", 0.0) for r in log[-LAST_STEPS:]),
        kappa_last5=100 * statistics.fmean(r["tools/kappa"] for r in log[-LAST_STEPS:]),
    )
    train = results.get("commands", {}).get(f"rl-{run}", {})
    if "seconds" in train:
        out["train_command_s"] = train["seconds"]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--prior", default="weak")
    ap.add_argument("--recipe", default="paragrpo")
    ap.add_argument("--ks", type=int, nargs=2, default=[0, 2], help="the base k and the other")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args()
    path = args.folder / "results.json"
    results = json.loads(path.read_text()) if path.is_file() else {}
    runs: dict[int, dict[int, dict]] = {}
    for k in args.ks:
        for seed in args.seeds:
            name = f"{args.prior}-{args.recipe}-server-k{k}-s{seed}"
            runs.setdefault(k, {})[seed] = {"run": name, **run_numbers(args.folder, name, results)}
    base, other = args.ks
    keys = [k for k, v in runs[base][args.seeds[0]].items() if isinstance(v, (int, float))]
    summary: dict = {}
    for key in keys:
        a = [runs[base][s][key] for s in args.seeds]
        b = [runs[other][s][key] for s in args.seeds]
        summary[key] = {
            f"k{base}": t_interval(a),
            f"k{other}": t_interval(b),
            f"k{other}-k{base}": compare(a, b),
        }
    print(json.dumps({"seeds": args.seeds, "interval": INTERVALS,
                      "summary": summary, "runs": runs}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
