"""Each cell against a base over seeds: the Welch and paired intervals, and the smallest gap the
seeds find with 80% power, at the seeds run and at a planned number of seeds.

Reads a results folder (a run's OUT, or its slimmed copy under ``results/``) through
staleness_compare's ``run_numbers`` (the evals' answers and summaries, the trainer's metrics).
A cell is a label and a run-name template with ``{seed}``; its runs that are not there yet are
listed under ``missing`` and the cell is left out, so the script can run while a grid fills
in. For each number (``--keys``) and each cell: the mean over seeds with a 95% t-interval; for
each cell but the base, cell - base (``intervals.compare``: Welch, paired by seed, whether both
exclude 0) and the gap a paired t-test finds with 80% power, with the per-seed differences'
spread, at the seeds run and (``--plan-seeds N``) at N seeds, the spread taken as it is.

    # the prefix x anchor 2 x 2 and vanilla (LOG.md, "Prepared, not run")
    python experiments/toy_paradox/probes/power.py OUT --seeds 0 1 2 3 4 --base vanilla \\
        --cell vanilla=weak-vanilla_grpo-s{seed} --cell bare=weak-gate_bare-s{seed} \\
        --cell prefix=weak-gate_prefix-s{seed} --cell anchor=weak-gate_anchor-s{seed} \\
        --cell both=weak-paragrpo-s{seed}
    # k = 2 against k = 0 through a vLLM server
    python experiments/toy_paradox/probes/power.py OUT --seeds 0 1 2 3 4 --base k0 \\
        --cell k0=weak-paragrpo-server-k0-s{seed} --cell k2=weak-paragrpo-server-k2-s{seed}

One JSON object on stdout; ``--table`` prints a markdown table of the first key instead.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from intervals import INTERVALS, POWER, compare, detectable_gap, t_interval
from staleness_compare import run_numbers

#: the numbers reported by default (run_numbers' keys)
KEYS = ("acc_k4", "acc_k64", "tool_use_k4", "kappa_last5", "r_fmt_last5")


def cell_values(folder: Path, template: str, seeds: list[int], results: dict) -> dict:
    """Each seed's numbers of one cell, or the run names that are not there yet."""
    runs, missing = {}, []
    for seed in seeds:
        name = template.format(seed=seed)
        if not (folder / "eval" / f"rl-{name}-4").is_dir():
            missing.append(name)
            continue
        runs[seed] = run_numbers(folder, name, results)
    return {"runs": runs, "missing": missing}


def against(base: list[float], other: list[float], plan_seeds: int | None) -> dict:
    """other - base, with the gap found with 80% power at these seeds and at ``plan_seeds``."""
    out = compare(base, other)
    if plan_seeds is not None and len(base) >= 2:
        sd = statistics.stdev(o - b for b, o in zip(base, other, strict=True))
        out["detectable_paired_planned"] = {
            "seeds": plan_seeds,
            "gap": detectable_gap(sd, plan_seeds),
        }
    return out


def table(folder: Path, cells: dict[str, str], base: str, seeds: list[int], keys: list[str],
          plan_seeds: int | None) -> dict:  # fmt: skip
    path = folder / "results.json"
    results = json.loads(path.read_text()) if path.is_file() else {}
    got = {label: cell_values(folder, t, seeds, results) for label, t in cells.items()}
    missing = {label: g["missing"] for label, g in got.items() if g["missing"]}
    # only the seeds every present cell has: the pairing needs the same seeds
    complete = {label: g["runs"] for label, g in got.items() if not g["missing"]}
    out: dict = {"seeds": seeds, "base": base, "interval": INTERVALS, "power": POWER,
                 "missing": missing, "cells": {}}  # fmt: skip
    for label, runs in complete.items():
        cell = {}
        for key in keys:
            values = [runs[s][key] for s in seeds]
            cell[key] = {"seeds": t_interval(values)}
            if label != base and base in complete:
                base_values = [complete[base][s][key] for s in seeds]
                cell[key][f"minus_{base}"] = against(base_values, values, plan_seeds)
        out["cells"][label] = cell
    return out


def markdown(report: dict, key: str) -> str:
    """The first key's rows: mean [t-interval], then against the base."""
    base = report["base"]
    planned = next((c.get(key, {}).get(f"minus_{base}", {}).get("detectable_paired_planned")
                    for c in report["cells"].values() if f"minus_{base}" in c.get(key, {})), None)  # fmt: skip
    head = ["cell", key, f"minus {base}", "Welch", "paired", "found with 80% power"]
    if planned:
        head.append(f"at {planned['seeds']} seeds")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, cell in report["cells"].items():
        s = cell[key]["seeds"]
        row = [
            label,
            f"{s['mean']:.1f} [{s.get('lo', s['mean']):.1f}, {s.get('hi', s['mean']):.1f}]",
        ]
        gap = cell[key].get(f"minus_{base}")
        if gap:
            row += [f"{gap['mean']:+.1f}", f"[{gap['welch']['lo']:.1f}, {gap['welch']['hi']:.1f}]",
                    f"[{gap['paired']['lo']:.1f}, {gap['paired']['hi']:.1f}]",
                    f"{gap['detectable_paired']:.1f}"]  # fmt: skip
            if planned:
                row.append(f"{gap['detectable_paired_planned']['gap']:.1f}")
        else:
            row += ["—"] * (len(head) - 2)
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--cell", action="append", required=True, metavar="LABEL=TEMPLATE",
                    help="a cell: its label and its runs' name with {seed}")  # fmt: skip
    ap.add_argument("--base", required=True, help="the label the other cells are compared with")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--keys", nargs="+", default=list(KEYS))
    ap.add_argument("--plan-seeds", type=int, default=None,
                    help="also state the gap found with 80%% power at this many seeds")  # fmt: skip
    ap.add_argument("--table", action="store_true", help="a markdown table of the first key")
    args = ap.parse_args()
    cells = dict(c.split("=", 1) for c in args.cell)
    if args.base not in cells:
        ap.error(f"--base {args.base}: not one of the cells ({', '.join(cells)})")
    report = table(args.folder, cells, args.base, args.seeds, args.keys, args.plan_seeds)
    for label, names in report["missing"].items():
        print(f"[power] {label}: not there yet: {', '.join(names)}", file=sys.stderr)
    print(markdown(report, args.keys[0]) if args.table else json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
