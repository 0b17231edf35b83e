"""An SFT stage with the lookup drill rehearsed in every step: does the drilled lookup survive?

Why: a model drilled to 100% on the option lookup (``lookup_drill.py``) forgets it in the 400
steps of the ``still`` warm-up (its drill text read at 34-37% afterwards, the still clips' letter
at 22-23 / 60; LOG.md, "The letter"). Rehearsal, training on the old task beside the new one, is
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
import random
from pathlib import Path

import torch
from lookup_drill import Builder, train
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
    order: list[str] = []

    def losses(rng: random.Random) -> dict[str, torch.Tensor]:
        nonlocal order
        if len(order) < a.batch:  # a fresh shuffled pass over the stored episodes
            order += rng.sample(files, len(files))
        rows, order = order[: a.batch], order[a.batch :]
        sft_loss = model(**collate([{"file": f} for f in rows])).loss
        ids, _, _, target = builder.batch(rng, a.drill_batch)
        return {"sft_loss": sft_loss, "drill_loss": model(input_ids=ids, labels=target).loss}

    log = {"settings": vars(a) | {"trajectories": len(files)}}
    train(model, proc, builder, losses, a, log, "rehearse.json")


if __name__ == "__main__":
    main()
