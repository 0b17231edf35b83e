#!/usr/bin/env python
"""The spread of the quick chain's numbers over its rebuilds: one row per build, one column per
stage, and each stage's min, max, spread and mean.

Why: one build of the chain said 98.3% at K = 4 and another 66.7%, from the thread count alone
(LOG.md, "Two builds of the quick chain"). Whether a number is the recipe's or one build's is
read off its spread over builds that differ in thread count and data seed (``run --data-seed``).

    python experiments/toy_paradox/rebuild_spread.py \\
        --build d0-t1=af57372=results/quick-rebuild/build-1 ... --out results/rebuild-spread/spread.json

Each ``--build`` is ``LABEL=COMMIT=FOLDER``, FOLDER a build's published results (``results.json``,
the stages' ``*-metrics.jsonl``); COMMIT is the code the build ran, which results.json does not
record. Per stage: the eval accuracies results.json holds (SFT at K = 4 with tools and direct, the
RL checkpoint at K = 4 on the first 30), and each SFT stage's last logged training loss and
token accuracy (the warm-up stages have no eval of their own; null where a build published no
metrics). A ``--select`` build (``run --select``) also gets its checkpoint choice: the chosen
step and every candidate's validation accuracy; its tool-SFT training numbers are those logged at
the chosen step. A ``--average`` build gets the steps it averaged (its training numbers: the
last step's).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

#: eval keys of a quick build's results.json, as the stage columns name them
EVALS = {
    "sft K=4 tools (60)": "sft-strong/k4",
    "sft K=4 direct (60)": "sft-strong/k4-direct",
    "rl K=4 tools (30)": "rl-strong-paragrpo-s0/k4",
}
#: SFT stages whose last logged training numbers are read from ``<stage>-metrics.jsonl``
SFT_STAGES = ("warmup-still", "warmup-glimpse", "sft-strong")


def last_logged(path: Path, at_step: int | None = None) -> dict:
    """The last row of a metrics file that has a training loss (at ``at_step`` when given: the
    step of the checkpoint a build selected)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "loss" in r and at_step in (None, r["step"])]
    if not rows:
        raise SystemExit(
            f"{path}: no row with a training loss" + (f" at step {at_step}" if at_step else "")
        )
    return rows[-1]


def selection_of(results: dict) -> dict | None:
    """How a --select or --average build made its SFT model: the chosen step and each
    candidate's validation accuracy (%), or the steps whose weights were averaged."""
    chosen = results.get("selection", {}).get("sft-strong")
    if chosen is None:
        return None
    if "steps" in chosen:  # --average
        return {"averaged_steps": chosen["steps"]}
    return {
        "chosen_step": chosen["chosen_step"],
        "val_accuracy": {
            str(c["step"]): round(100 * c["val_accuracy"], 1) for c in chosen["candidates"]
        },
    }


def build_row(label: str, commit: str, folder: Path) -> dict:
    results = json.loads((folder / "results.json").read_text())
    settings = results["settings"]
    row = {
        "build": label,
        "commit": commit,
        "folder": str(folder),
        "threads": results.get("threads"),
        "data_seed": settings.get("data_seed", 0),
        "accuracy": {},
        "training": {},
    }
    selection = selection_of(results)
    if selection is not None:
        row["selection"] = selection
    for column, key in EVALS.items():
        got = results["eval"].get(key)
        row["accuracy"][column] = None if got is None else round(100 * got["accuracy"], 1)
    for stage in SFT_STAGES:
        path = folder / f"{stage}-metrics.jsonl"
        if not path.is_file():  # an older build published its evals only
            row["training"][stage] = None
            continue
        at = (selection or {}).get("chosen_step") if stage == "sft-strong" else None
        last = last_logged(path, at)
        row["training"][stage] = {
            "step": last["step"],
            "loss": round(last["loss"], 4),
            "token_accuracy": round(last.get("mean_token_accuracy", float("nan")), 4),
        }
    return row


def spread(values: list[float], digits: int = 1) -> dict:
    """min, max, max - min, mean and (n > 1) the sample standard deviation, rounded."""
    out = {"n": len(values), "min": min(values), "max": max(values)}
    out["spread"] = round(out["max"] - out["min"], digits)
    out["mean"] = round(statistics.fmean(values), digits)
    if len(values) > 1:
        out["sd"] = round(statistics.stdev(values), digits)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", action="append", required=True, help="LABEL=COMMIT=FOLDER")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    rows = []
    for spec in args.build:
        label, commit, folder = spec.split("=", 2)
        rows.append(build_row(label, commit, Path(folder)))
    stages = {}
    for column in EVALS:
        values = [r["accuracy"][column] for r in rows if r["accuracy"][column] is not None]
        if values:
            stages[column] = spread(values)
    for stage in SFT_STAGES:
        losses = [r["training"][stage]["loss"] for r in rows if r["training"][stage]]
        if losses:
            stages[f"{stage} final loss"] = spread(losses, digits=4)
    steps = [r["selection"]["chosen_step"] for r in rows if "chosen_step" in r.get("selection", {})]
    if steps:
        stages["chosen step"] = spread([float(s) for s in steps], digits=1)
    report = {"builds": rows, "stages": stages}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    width = max(len(r["build"]) for r in rows)
    print(f"{'build':{width}}  " + "  ".join(EVALS))
    for r in rows:
        cells = "  ".join(f"{r['accuracy'][c]!s:>{len(c)}}" for c in EVALS)
        print(f"{r['build']:{width}}  {cells}")
    for name, s in stages.items():
        print(f"{name}: {s}")


if __name__ == "__main__":
    main()
