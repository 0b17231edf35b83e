"""The shipped demo model on the videos ``tests/toy/test_demo_model.py`` uses, over any seed range.

One video each of ``paravt make-toy-task --n 1 --seed S`` (its mcq question), every seed of the
range played by the demo with the settings ``paravt infer --model toy-demo`` resolves, one JSON
line per seed on stdout (options, gold letter, the answer text, how it was read, calls in the
first turn, R_acc), a count on stderr. Why: the test asserts a rate over seeds 0-19, and its bar
is chosen from this measurement (experiments/toy_paradox/LOG.md, "The shipped demo model").

    python experiments/toy_paradox/probes/demo_seeds.py --seeds 0 40 --work /tmp/demo-seeds
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from paravt.agent.config import InferConfig
from paravt.agent.engine import EpisodeEngine
from paravt.schema.episodes import EpisodeInput
from paravt.backends.factory import make_backend
from paravt.toy.oracle import episode_reward
from paravt.config import load_config
from paravt.data.rows import read_rows
from paravt.rewards.answers import extract_mcq_letter
from paravt.schema.questions import LETTERS
from paravt.toy.demo import DEMO_MODEL, with_demo_defaults
from paravt.toy.generate import make_toy_task
from paravt.toy.task import ToyTaskConfig


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", nargs=2, type=int, metavar=("FIRST", "STOP"), default=(0, 20))
    ap.add_argument("--work", type=Path, required=True, help="where the videos are written")
    args = ap.parse_args()
    inputs, rows = [], {}
    for seed in range(*args.seeds):
        out = args.work / f"s{seed}"
        if not (out / "train.jsonl").is_file():
            make_toy_task(ToyTaskConfig(out=str(out), n=1, seed=seed, visibility_videos=0))
        [r] = [r for r in read_rows(out / "train.jsonl", out).rows if r.question_type == "mcq"]
        inputs.append(
            EpisodeInput(f"s{seed}", r.video, r.question, r.options, "mcq", None, r.answer)
        )
        rows[f"s{seed}"] = r
    cfg = load_config(InferConfig, base=with_demo_defaults({"backend": {"model": DEMO_MODEL}}))
    t0 = time.perf_counter()
    records = EpisodeEngine(make_backend(cfg.backend), cfg.engine).run(inputs)
    wall = time.perf_counter() - t0
    right = 0
    for rec in records:
        r = rows[rec.id]
        acc = episode_reward(rec).acc
        right += acc == 1.0
        line = {
            "seed": int(rec.id[1:]),
            "colour": r.options[LETTERS.index(r.answer)],
            "options": r.options,
            "gold": r.answer,
            "answer": rec.prediction,
            "read_as": extract_mcq_letter(rec.prediction, r.options),
            "answer_source": rec.answer_source,
            "calls_turn0": sum(1 for c in rec.calls if c.turn == 0 and c.status == "ok"),
            "acc": acc,
        }
        print(json.dumps(line))
    print(f"{right} / {len(records)} right; episodes in {wall:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
