"""The paradox table over seeds: four recipes from one checkpoint, each number a t-interval.

Reads a results folder (a run's OUT, or its slimmed copy under ``results/``) holding the runs
``rl-{prior}-{recipe}-s{seed}`` for vanilla GRPO, anchoring only, gating only and PARA-GRPO
(``run --only weak-RECIPE --seed S``). For each run: accuracy at each K and tool use (its evals),
R_fmt and the training's κ over the last five steps (the per-step log), and the seconds a step
took (all read by staleness_compare's ``run_numbers``). For each recipe and number: the
mean over seeds with a 95% t-interval over the seed means (the seed is the unit: questions
within a seed are not independent draws of the training). For each recipe against vanilla GRPO
and against PARA-GRPO (``intervals.compare``): the difference of the means, the Welch interval
(unequal variances: the arms' seed spreads differ by a factor of six) and the paired one (the
same seed: same prompts, same K draws where both gate, same sampling seed), a difference being
claimed only where both exclude 0, and the smallest gap a paired test over these seeds finds
with 80% power.

    python experiments/toy_paradox/probes/paradox_table.py RESULTS --seeds 0 1 2

One JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from intervals import INTERVALS, compare, t_interval
from staleness_compare import run_numbers

#: the table's rows, in the order the paper's ablation reads them
RECIPES = ("vanilla_grpo", "anchor_only", "gating_only", "paragrpo")
#: the numbers of each row (run_numbers' keys)
NUMBERS = ("acc_k4", "acc_k64", "tool_use_k4", "tool_use_k64", "r_fmt_last5", "kappa_last5",
           "step_time_s")  # fmt: skip
#: what every row is compared with: the baseline and the full method
AGAINST = ("vanilla_grpo", "paragrpo")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--prior", default="weak")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = ap.parse_args()
    path = args.folder / "results.json"
    results = json.loads(path.read_text()) if path.is_file() else {}
    runs: dict[str, dict[int, dict]] = {}
    for recipe in RECIPES:
        for seed in args.seeds:
            name = f"{args.prior}-{recipe}-s{seed}"
            numbers = run_numbers(args.folder, name, results)
            runs.setdefault(recipe, {})[seed] = {"run": name, **numbers}
    table: dict = {}
    for recipe in RECIPES:
        row = {}
        for key in NUMBERS:
            values = [runs[recipe][s][key] for s in args.seeds]
            row[key] = {"seeds": t_interval(values)}
            for base in AGAINST:
                if base == recipe:
                    continue
                others = [runs[base][s][key] for s in args.seeds]
                row[key][f"minus_{base}"] = compare(others, values)
        table[recipe] = row
    sft = {k: v for k, v in results.get("eval", {}).items() if k.startswith(f"sft-{args.prior}/")}
    print(json.dumps({"seeds": args.seeds, "prior": args.prior,
                      "interval": INTERVALS,
                      "sft": sft, "table": table, "runs": runs}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
