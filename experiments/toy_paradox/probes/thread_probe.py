"""Does the thread count change a build? One SFT stage trained twice, at 1 and at N threads.

Takes a stage's config as ``run`` wrote it (``OUT/configs/warmup-still.yaml``), trains it for a
few steps with every step logged, once at each thread count (``OMP_NUM_THREADS`` and
``MKL_NUM_THREADS``, as ``run --threads`` sets them), and reports the first step whose loss
differs, the largest loss gap over the steps, and the largest parameter difference after the
last step. One JSON object on stdout. Why: two builds at one thread count were byte-identical
stage by stage (``compare_builds.py``); this is the other candidate cause of the 98.3% / 66.7%
pair (LOG.md, "Two builds of the quick chain").

    python experiments/toy_paradox/probes/thread_probe.py OUT/configs/warmup-still.yaml \
        --work tmp/threads --steps 40 --threads 1 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from safetensors.torch import load_file


def train(config: Path, folder: Path, steps: int, threads: int) -> list[dict]:
    """One ``paravt sft`` of ``steps`` steps in ``folder`` at ``threads`` threads; its log."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    cmd = [sys.executable, "-m", "paravt.cli.main", "sft", "--config", str(config),
           "--set", f"output_dir={folder}", "--set", f"trainer.max_steps={steps}",
           "--set", "trainer.logging_steps=1", "--json"]  # fmt: skip
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    rows = [json.loads(x) for x in (folder / "metrics.jsonl").read_text().splitlines()]
    return [r for r in rows if "loss" in r]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config", type=Path)
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--threads", nargs=2, type=int, default=(1, 2))
    args = ap.parse_args()
    logs, weights = {}, {}
    for n in args.threads:
        folder = args.work / f"threads-{n}"
        logs[n] = train(args.config, folder, args.steps, n)
        weights[n] = load_file(str(folder / "final" / "model.safetensors"))
    a, b = (logs[n] for n in args.threads)
    gaps = [abs(x["loss"] - y["loss"]) for x, y in zip(a, b, strict=True)]
    first = next((x["step"] for x, g in zip(a, gaps, strict=True) if g != 0.0), None)
    wa, wb = (weights[n] for n in args.threads)
    json.dump(
        {
            "config": args.config.name,
            "steps": args.steps,
            "threads": list(args.threads),
            "first_step_loss_differs": first,
            "max_loss_gap": max(gaps),
            "loss_at_last_step": [a[-1]["loss"], b[-1]["loss"]],
            "max_param_diff_after": max(
                (wa[k].float() - wb[k].float()).abs().max().item() for k in wa
            ),
        },
        sys.stdout,
        indent=1,
    )
    print()


if __name__ == "__main__":
    main()
