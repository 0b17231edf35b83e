"""Where two builds of the toy chain part: stage by stage, the first step whose numbers differ.

Two ``run`` output folders (the same mode and settings, built twice) are read stage by stage in
chain order: the random-init model, each warm-up stage, the tool SFT, the RL run. For each
stage: whether its training data (the trajectory cache) is byte-identical, the first logged step
whose loss or grad norm differs and by how much, whether the saved weights are byte-identical
(else the largest parameter difference), each run's thread record (``config.json``'s
``numerics``), and the evals' accuracy with the questions answered differently. One JSON
object on stdout. Why: a chain that rebuilds to other numbers has to be traced to the first
stage (and step) where the builds part, before a cause can be named (LOG.md, "Two builds of
the quick chain").

    python experiments/toy_paradox/probes/compare_builds.py OUT_A OUT_B > compare.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from safetensors.torch import load_file

#: a stage's run folder under OUT and the folder of its saved model, in chain order
STAGES = (
    ("init", "runs/warmup-still", "runs/warmup-still/toy-qwen3-vl"),
    ("warmup-still", "runs/warmup-still", "runs/warmup-still/final"),
    ("warmup-glimpse", "runs/warmup-glimpse", "runs/warmup-glimpse/final"),
    ("sft-strong", "runs/sft-strong", "sft"),
    ("rl-strong-paragrpo-s0", "runs/rl-strong-paragrpo-s0", "runs/rl-strong-paragrpo-s0/final"),
)
#: the per-step numbers compared between the builds' metrics.jsonl
STEP_KEYS = ("loss", "grad_norm", "reward/total", "reward/acc")


def digest(folder: Path) -> str | None:
    """SHA-256 over a trajectory cache's token files and report (names and bytes, sorted), None
    where it is missing; its ``episodes.jsonl`` is left out, as it names the build's own video
    paths."""
    if not folder.is_dir():
        return None
    h = hashlib.sha256()
    files = [p for p in folder.rglob("*") if p.suffix == ".pt" or p.name == "report.json"]
    for path in sorted(files):
        h.update(str(path.relative_to(folder)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def same(a: str | None, b: str | None) -> bool | None:
    """Whether two digests agree; None where either side has nothing to digest."""
    return None if a is None or b is None else a == b


def weights_gap(a: Path, b: Path) -> dict:
    """Byte-identical weights, or the largest absolute difference over all parameters."""
    fa, fb = a / "model.safetensors", b / "model.safetensors"
    if not (fa.is_file() and fb.is_file()):
        return {"missing": True}
    if fa.read_bytes() == fb.read_bytes():
        return {"identical": True, "max_abs_diff": 0.0}
    ta, tb = load_file(str(fa)), load_file(str(fb))
    gap = max((ta[k].float() - tb[k].float()).abs().max().item() for k in ta)
    return {"identical": False, "max_abs_diff": gap}


def metrics(folder: Path) -> list[dict]:
    path = folder / "metrics.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []


def first_difference(a: list[dict], b: list[dict]) -> dict | None:
    """The first logged step where one of STEP_KEYS differs, with both values."""
    rows_b = {r.get("step"): r for r in b}
    for row in a:
        other = rows_b.get(row.get("step"))
        if other is None:
            continue
        for key in STEP_KEYS:
            if key in row and row[key] != other.get(key):
                return {"step": row["step"], "key": key, "a": row[key], "b": other.get(key)}
    return None


def numerics(folder: Path) -> dict | None:
    path = folder / "config.json"
    return json.loads(path.read_text()).get("numerics") if path.is_file() else None


def eval_gap(a: Path, b: Path) -> dict:
    """Each eval both builds ran: accuracy of each, and the questions answered differently."""
    out = {}
    for summary in sorted((a / "eval").glob("*/summary.json")):
        other = b / "eval" / summary.parent.name / "summary.json"
        if not other.is_file():
            continue
        acc = [
            json.loads(p.read_text())["metrics"]["variants"]["robust"].get("accuracy")
            for p in (summary, other)
        ]
        answers = [answer_texts(p.parent / "results.jsonl") for p in (summary, other)]
        differ = sorted(k for k in answers[0] if answers[0][k] != answers[1].get(k))
        out[summary.parent.name] = {"accuracy": acc, "answers_differ": len(differ)}
    return out


def answer_texts(path: Path) -> dict[str, str]:
    rows = [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []
    return {str(r.get("id", i)): str(r.get("prediction")) for i, r in enumerate(rows)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    args = ap.parse_args()
    stages = []
    for name, run, model in STAGES:
        ra, rb = args.a / run, args.b / run
        row = {
            "stage": name,
            "trajectories_identical": None
            if name == "init"
            else same(digest(ra / "trajectories"), digest(rb / "trajectories")),
            "first_step_difference": None
            if name == "init"
            else first_difference(metrics(ra), metrics(rb)),
            "weights": weights_gap(args.a / model, args.b / model),
            "threads": [(numerics(r) or {}).get("torch_threads") for r in (ra, rb)],
        }
        stages.append(row)
    first = next((s["stage"] for s in stages if not s["weights"].get("identical", True)), None)
    json.dump(
        {
            "builds": [str(args.a), str(args.b)],
            "stages": stages,
            "first_stage_that_differs": first,
            "numerics": [
                numerics(args.a / "runs/warmup-still"),
                numerics(args.b / "runs/warmup-still"),
            ],
            "eval": eval_gap(args.a, args.b),
        },
        sys.stdout,
        indent=1,
    )
    print(file=sys.stdout)


if __name__ == "__main__":
    main()
