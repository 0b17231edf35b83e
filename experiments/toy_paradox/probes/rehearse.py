"""An SFT stage with the lookup drill rehearsed in every step: does the drilled lookup survive?

Why: a model drilled to 100% on the option lookup (``lookup_drill.py``) forgets it in the 400
steps of the ``still`` warm-up (its drill text read at 34-37% afterwards, the still clips' letter
at 22-23 / 60; README, "The letter"). Rehearsal, training on the old task beside the new one, is
the usual remedy for such forgetting; ``paravt sft`` has no way to mix in text sequences, so this
probe runs the same stage by hand: each step is one batch of the stage's stored trajectories
(the files ``paravt sft`` wrote, read by its own collator) plus one batch of drill sequences,
the two losses summed, with the stage's optimizer settings (AdamW, lr 3e-4 after 5 warm-up
steps, gradient norm clipped at 1).

    python experiments/toy_paradox/probes/rehearse.py --model DRILLED --trajectories RUN/trajectories --out OUT

Writes the model to OUT (``paravt eval --model OUT``) and ``OUT/rehearse.json``: the settings and,
every ``eval_every`` steps, the two losses and the drill's letter accuracy on held-out sequences.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch
from lookup_drill import Builder, accuracy
from transformers import AutoModelForImageTextToText, AutoProcessor

from paravt.train.sft.dataset import StreamCollator


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--trajectories", required=True, type=Path)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=8, help="trajectories a step")
    ap.add_argument("--drill-batch", type=int, default=8, help="drill sequences a step")
    ap.add_argument("--form", choices=("oracle", "episode"), default="episode")
    ap.add_argument("--blocks", type=int, default=6)
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    a.out.mkdir(parents=True, exist_ok=True)
    proc = AutoProcessor.from_pretrained(a.model)
    model = AutoModelForImageTextToText.from_pretrained(a.model, dtype=torch.float32)
    collate = StreamCollator(proc)
    files = sorted(str(p) for p in a.trajectories.glob("[0-9]*.pt"))
    if not files:
        raise SystemExit(f"--trajectories {a.trajectories}: no stored trajectories (NNNNNN.pt)")
    builder = Builder(proc.tokenizer, a.form, a.blocks, 1 if a.form == "episode" else 2, "all")
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / a.warmup_steps))
    rng = random.Random(a.seed)
    order: list[str] = []
    log = {"settings": vars(a) | {"trajectories": len(files)}, "curve": []}
    t0 = time.time()
    for step in range(1, a.steps + 1):
        model.train()
        if len(order) < a.batch:  # a fresh shuffled pass over the stored episodes
            order += rng.sample(files, len(files))
        rows, order = order[: a.batch], order[a.batch :]
        sft_loss = model(**collate([{"file": f} for f in rows])).loss
        ids, _, _, target = builder.batch(rng, a.drill_batch)
        drill_loss = model(input_ids=ids, labels=target).loss
        (sft_loss + drill_loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        if step % a.eval_every == 0 or step == a.steps:
            model.eval()
            row = {
                "step": step,
                "sft_loss": round(sft_loss.item(), 4),
                "drill_loss": round(drill_loss.item(), 4),
                "seconds": round(time.time() - t0, 1),
            }
            row |= accuracy(model, builder, seed=10_000 + a.seed, n=64)
            log["curve"].append(row)
            print(json.dumps(row), flush=True)
    log["seconds"] = round(time.time() - t0, 1)
    model.save_pretrained(a.out)
    proc.save_pretrained(a.out)
    (a.out / "rehearse.json").write_text(json.dumps(log, indent=1, default=str))


if __name__ == "__main__":
    main()
