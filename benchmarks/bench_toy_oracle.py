"""The toy oracle through the real episode engine: what each policy scores at each K.

Claim (docs/TOY_TASK.md): on the toy task the parallel sweep solves the task at K = 4, and
answering from the overview alone is near chance at K = 4 but not at K = 64. The oracle
(``paravt.toy.oracle.ToyOracleBackend``) is run on a generated split at training pixel budgets
and every episode is scored with ``paravt.rewards.compose``. Per setting: mcq accuracy, tvg mean
IoU and share with IoU ≥ 0.5, mean R_fmt, κ (share of episodes with an executed call) and parse
failures. Output: ``benchmarks/results/bench_toy_oracle.json``.

    paravt make-toy-task /tmp/toy --n 100 --seed 0 --split train
    python benchmarks/bench_toy_oracle.py --data /tmp/toy --split train --limit 200
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
# (K, tool_prior, format_noise)
SETTINGS = ((4, 1.0, 0.0), (4, 0.0, 0.0), (64, 0.0, 0.0), (64, 1.0, 0.0), (4, 1.0, 1.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="folder written by paravt make-toy-task")
    ap.add_argument("--split", default="train")
    ap.add_argument("--limit", type=int, default=200, help="rows (2 per video)")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    from paravt.agent.config import EngineConfig
    from paravt.agent.engine import EpisodeEngine
    from paravt.data.rows import read_rows
    from paravt.schema.episodes import EpisodeInput
    from paravt.toy.oracle import ToyOracleBackend, episode_reward

    data = Path(args.data)
    rows = read_rows(data / f"{args.split}.jsonl", data).rows[: args.limit]
    out = []
    for k, prior, noise in SETTINGS:
        inputs = [
            EpisodeInput(r.id, r.video, r.question, r.options, r.question_type, k, r.answer)
            for r in rows
        ]
        cfg = EngineConfig(frames=k, min_pixels=784, max_pixels=50176)
        t0 = time.perf_counter()
        recs = EpisodeEngine(ToyOracleBackend(tool_prior=prior, format_noise=noise), cfg).run(
            inputs
        )
        seconds = time.perf_counter() - t0
        acc, iou, fmt = [], [], []
        for r in recs:
            b = episode_reward(r)
            (acc if r.question_type == "mcq" else iou).append(b.acc)
            fmt.append(b.fmt)
        row = {
            "K": k,
            "tool_prior": prior,
            "format_noise": noise,
            "episodes": len(recs),
            "mcq_accuracy": round(sum(acc) / max(len(acc), 1), 4),
            "tvg_miou": round(sum(iou) / max(len(iou), 1), 4),
            "tvg_iou_ge_0.5": round(sum(x >= 0.5 for x in iou) / max(len(iou), 1), 4),
            "r_fmt": round(sum(fmt) / len(fmt), 4),
            "kappa": round(sum(r.tool_counts.executed_ok > 0 for r in recs) / len(recs), 4),
            "parse_failures": sum(r.tool_counts.parse_errors for r in recs),
            "errors": sum(r.status != "ok" for r in recs),
            "seconds": round(seconds, 2),
        }
        print(json.dumps(row))
        out.append(row)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_toy_oracle.json").write_text(
        json.dumps(
            {"data": str(data), "split": args.split, "rows": len(rows), "results": out}, indent=2
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
