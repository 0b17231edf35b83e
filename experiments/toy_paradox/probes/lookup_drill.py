"""A text-only drill of the option lookup: option keys, then many matches, loss on the letters.

Why: in a toy episode the letter is one loss token among ~40 to ~150, and the model did not
learn to match a colour to its option letter in 400 warm-up steps (20 of 60 held-out still
clips right, colour read right 55-57 times; README, "The letter"). Here every sequence holds a
key (``A. blue=A`` ..., the key form the oracle tried) and a dozen matches in the oracle's form
(``The square is red=B.``), each letter a loss token, so one step carries a dozen lookups
instead of one. Nothing else about the task is taught: no frames, no protocol text.

    python experiments/toy_paradox/probes/lookup_drill.py --model IN --out OUT --steps 300

Writes the drilled model to OUT (a model folder ``paravt sft --set model=OUT`` starts from) and
``OUT/drill.json`` (settings, the letter accuracy on fresh held-out keys every 25 steps).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

import torch
from transformers import AutoModelForImageTextToText, AutoProcessor

from paravt.toy.task import PALETTE

LETTERS = "ABCD"


def option_key(options: dict) -> str:
    """The options as the question lists them, each line closed by its own letter (``A. blue=A``):
    the key form tried in the oracle and reverted, since on the still clips it was matched no
    better than the restated options (20 of 60 either way; README, "The letter")."""
    return "".join(f"{k}. {options[k]}={k}\n" for k in sorted(options))


def sequence(rng: random.Random, tok, matches: int) -> tuple[list[int], list[int]]:
    """One key and ``matches`` lookups: (input ids, labels with -100 off the letters)."""
    colours = rng.sample(list(PALETTE), len(LETTERS))
    options = dict(zip(LETTERS, colours, strict=True))
    ids = tok.encode(option_key(options), add_special_tokens=False)
    labels = [-100] * len(ids)
    for _ in range(matches):
        letter = rng.choice(LETTERS)
        head = tok.encode(f"The square is {options[letter]}=", add_special_tokens=False)
        tail = tok.encode(f"{letter}.\n", add_special_tokens=False)
        ids += head + tail
        labels += [-100] * len(head) + [tail[0]] + [-100] * (len(tail) - 1)
    return ids, labels


def batch(rng: random.Random, tok, size: int, matches: int) -> tuple[torch.Tensor, torch.Tensor]:
    pairs = [sequence(rng, tok, matches) for _ in range(size)]
    width = max(len(i) for i, _ in pairs)
    ids = torch.full((size, width), tok.pad_token_id or 0)
    labels = torch.full((size, width), -100)
    for row, (i, lab) in enumerate(pairs):
        ids[row, : len(i)] = torch.tensor(i)
        labels[row, : len(lab)] = torch.tensor(lab)
    return ids, labels


@torch.no_grad()
def accuracy(model, tok, seed: int, n: int, matches: int) -> float:
    ids, labels = batch(random.Random(seed), tok, n, matches)
    logits = model(input_ids=ids).logits[:, :-1]
    target = labels[:, 1:]
    keep = target != -100
    return (logits.argmax(-1)[keep] == target[keep]).float().mean().item()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--matches", type=int, default=12)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    proc = AutoProcessor.from_pretrained(a.model)
    tok = proc.tokenizer
    model = AutoModelForImageTextToText.from_pretrained(a.model, dtype=torch.float32)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
    rng = random.Random(a.seed)
    log = {"settings": vars(a) | {"model": a.model, "out": str(a.out)}, "curve": []}
    t0 = time.time()
    for step in range(1, a.steps + 1):
        model.train()
        ids, labels = batch(rng, tok, a.batch, a.matches)
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        if step % 25 == 0 or step == a.steps:
            model.eval()
            acc = accuracy(model, tok, seed=10_000 + a.seed, n=64, matches=a.matches)
            log["curve"].append({"step": step, "loss": round(loss.item(), 4), "letter_acc": acc})
            print(json.dumps(log["curve"][-1]), flush=True)
    log["seconds"] = round(time.time() - t0, 1)
    model.save_pretrained(a.out)
    proc.save_pretrained(a.out)
    (a.out / "drill.json").write_text(json.dumps(log, indent=1, default=str))


if __name__ == "__main__":
    main()
