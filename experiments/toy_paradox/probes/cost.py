"""What a planned set of toy RL runs costs, from the seconds the committed runs took.

Reads each reference folder's ``results.json`` (the runner's record: every command with its
seconds, the settings with the RL step count): the seconds an RL step took (a run's training
command over its steps), an RL run's evals, and the weak SFT with its evals. For a plan of
``--runs`` runs of ``--steps`` steps, each holding ``--cores`` cores (1 for a run at one
thread with the policy as sampler, 2 for a run beside its vLLM server), it states the CPU hours
at the median and at the slowest reference pace (the references ran on a 2-core machine shared
to different degrees, so the pace is a range, not a constant), and the wall hours with
``--lanes`` runs side by side.

    python experiments/toy_paradox/probes/cost.py experiments/toy_paradox/results/paradox-3seeds \\
        experiments/toy_paradox/results/samplers-3x3 --match 'rl-weak-(?!.*vllm)' \\
        --runs 25 --steps 20 --cores 1 --lanes 2

One JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from pathlib import Path


#: the weak prior's SFT and its evals: built once, at two threads, before the runs
SFT_COMMANDS = ("sft-weak", "eval-sft-weak-4", "eval-sft-weak-64")


def paces(folders: list[Path], match: str) -> dict:
    """Seconds a step of each matching RL run, its evals' seconds, and the SFT's."""
    step, evals, sft = [], [], []
    for folder in folders:
        results = json.loads((folder / "results.json").read_text())
        steps = results["settings"]["rl"]["steps"]
        commands = results["commands"]
        for name, c in commands.items():
            if name.startswith("rl-") and re.match(match, name):
                step.append(c["seconds"] / steps)
                run_evals = [
                    v["seconds"] for k, v in commands.items() if k.startswith(f"eval-{name}-")
                ]
                if run_evals:
                    evals.append(sum(run_evals))
        once = [c["seconds"] for n, c in commands.items() if n in SFT_COMMANDS]
        if "sft-weak" in commands:
            sft.append(sum(once))
    if not step:
        raise SystemExit(f"no RL run matches {match!r} in {', '.join(map(str, folders))}")
    return {"step_s": step, "evals_s": evals, "sft_s": sft}


def plan(p: dict, runs: int, steps: int, cores: int, lanes: int) -> dict:
    """CPU and wall hours of the plan at the median and the slowest pace."""
    evals = statistics.median(p["evals_s"]) if p["evals_s"] else 0.0
    sft = 2 * statistics.median(p["sft_s"]) if p["sft_s"] else 0.0  # two threads
    out = {}
    for label, pace in (("median", statistics.median(p["step_s"])), ("slowest", max(p["step_s"]))):
        run_s = steps * pace + evals
        out[label] = {"seconds_a_step": round(pace, 1), "seconds_a_run": round(run_s),
                      "cpu_hours": round((runs * run_s * cores + sft) / 3600, 1),
                      "wall_hours": round(runs * run_s / lanes / 3600, 1)}  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", type=Path, nargs="+", help="results folders of reference runs")
    ap.add_argument("--match", default="rl-", help="a regex the reference runs' names match")
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--cores", type=int, default=1, help="cores a run holds (2 beside a server)")
    ap.add_argument("--lanes", type=int, default=1, help="runs side by side")
    args = ap.parse_args()
    p = paces(args.folders, args.match)
    report = {
        "references": [str(f) for f in args.folders],
        "reference_runs": len(p["step_s"]),
        "seconds_a_step": {
            "min": round(min(p["step_s"]), 1),
            "median": round(statistics.median(p["step_s"]), 1),
            "max": round(max(p["step_s"]), 1),
        },  # fmt: skip
        "evals_a_run_s": round(statistics.median(p["evals_s"]), 1) if p["evals_s"] else None,
        "plan": {"runs": args.runs, "steps": args.steps, "cores": args.cores, "lanes": args.lanes},
        **plan(p, args.runs, args.steps, args.cores, args.lanes),
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
