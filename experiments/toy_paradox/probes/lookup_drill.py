"""A text-only drill of the option lookup: option lists, then matches, loss on the letters only.

Why: in a toy episode the letter is one loss token among ~40 to ~150, and the 5 M model did not
learn to match a colour to its option letter in 400 warm-up steps (20 of 60 held-out still
clips right while the colour was read right 55-57 times; LOG.md, "The letter"). Here every
sequence holds a dozen lookups instead of one, and nothing else is taught: no frames, no
protocol text. The loss is on every token (``--loss all``, the default) or on the letters only.
Two forms:

- ``oracle`` (default): what the oracle writes at the end of its final think, the options
  restated and then the match (``A. blue`` ... ``The red square is option B.``). A sequence
  holds ``blocks`` option lists, each followed by ``matches`` lookups.
- ``episode``: the question's option list, then the oracle's whole final turn (``<think>``, the
  colour seen, the list restated, the match, ``<answer>``), one lookup a block: the context the
  ``oracle`` form lacks. A model drilled in that form alone matched 100% there, 30% with the
  colour named before the list and 47% with the list written twice (LOG.md, "The letter").
- ``key``: one key ``A. blue=A`` ... then lookups ``The square is red=B.``, the induction-friendly
  form tried once in the oracle and reverted (LOG.md).

    python experiments/toy_paradox/probes/lookup_drill.py --model tiny:qwen3-vl:toy --out OUT

``--model`` is a model folder or ``tiny:<arch>:<preset>`` (built into OUT/init). Writes the drilled
model to OUT (a folder ``paravt sft`` starts from) and ``OUT/drill.json``: the settings, and the
letter accuracy on fresh held-out sequences every ``eval_every`` steps, both over all lookups and
over the first lookup after each list (the exact oracle form).
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
from paravt.train.launch.startup import resolve_model

LETTERS = "ABCD"
QUESTION = "What colour was the square that appeared briefly?"
WHERE = ("overview", "windows")


def options_of(rng: random.Random) -> dict[str, str]:
    return dict(zip(LETTERS, rng.sample(list(PALETTE), len(LETTERS)), strict=True))


class Builder:
    """Token ids and labels of drill sequences; a label is -100 except on the letters."""

    def __init__(self, tok, form: str, blocks: int, matches: int, loss: str = "letters"):
        self.tok, self.form, self.blocks, self.matches = tok, form, blocks, matches
        self.loss = loss

    def _enc(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False)

    def _text(self, ids: list[int], labels: list[int], text: str) -> None:
        piece = self._enc(text)
        ids += piece
        labels += [-100] * len(piece)

    def _letter(self, ids, labels, first, letter: str, tail: str, is_first: bool) -> None:
        piece = self._enc(letter + tail)
        first.append(is_first)
        ids += piece
        labels += [piece[0]] + [-100] * (len(piece) - 1)

    def sequence(self, rng: random.Random) -> tuple[list[int], list[int], list[bool]]:
        """(input ids, labels, for each lookup whether it is the first after its list)."""
        ids: list[int] = []
        labels: list[int] = []
        first: list[bool] = []
        if self.form == "key":
            opts = options_of(rng)
            self._text(ids, labels, "".join(f"{k}. {opts[k]}={k}\n" for k in LETTERS))
            for i in range(self.blocks * self.matches):
                letter = rng.choice(LETTERS)
                self._text(ids, labels, f"The square is {opts[letter]}=")
                self._letter(ids, labels, first, letter, ".\n", i == 0)
            return ids, labels, first
        if self.form == "episode":  # the question's list, then the oracle's whole final turn
            for _ in range(self.blocks):
                opts = options_of(rng)
                listed = "\n".join(f"{k}. {opts[k]}" for k in LETTERS) + "\n"
                letter = rng.choice(LETTERS)
                seen = f"The {rng.choice(WHERE)} frames show a {opts[letter]} square.\n"
                self._text(ids, labels, f"{QUESTION}\n{listed}<think>\n{seen}{listed}")
                self._text(ids, labels, f"The {opts[letter]} square is option ")
                self._letter(ids, labels, first, letter, ".\n</think>\n<answer>", True)
                self._text(ids, labels, f"{letter}</answer>\n")
            return ids, labels, first
        for _ in range(self.blocks):
            opts = options_of(rng)
            self._text(ids, labels, "\n".join(f"{k}. {opts[k]}" for k in LETTERS) + "\n")
            for i in range(self.matches):
                letter = rng.choice(LETTERS)
                self._text(ids, labels, f"The {opts[letter]} square is option ")
                self._letter(ids, labels, first, letter, ".\n", i == 0)
        return ids, labels, first

    def batch(self, rng: random.Random, size: int):
        rows = [self.sequence(rng) for _ in range(size)]
        width = max(len(r[0]) for r in rows)
        ids = torch.full((size, width), self.tok.pad_token_id or 0)
        labels = torch.full((size, width), -100)
        for row, (i, lab, _) in enumerate(rows):
            ids[row, : len(i)] = torch.tensor(i)
            labels[row, : len(lab)] = torch.tensor(lab)
        first = torch.tensor([f for r in rows for f in r[2]])
        if self.loss == "all":  # the training target: every real token (the letters still scored)
            pad = torch.zeros_like(ids, dtype=torch.bool)
            for row, (i, _, _) in enumerate(rows):
                pad[row, len(i) :] = True
            return ids, labels, first, ids.masked_fill(pad, -100)
        return ids, labels, first, labels


@torch.no_grad()
def accuracy(model, builder: Builder, seed: int, n: int) -> dict[str, float]:
    ids, labels, first, _ = builder.batch(random.Random(seed), n)
    logits = model(input_ids=ids).logits[:, :-1]
    target = labels[:, 1:]
    keep = target != -100
    right = logits.argmax(-1)[keep] == target[keep]  # row-major: the lookups in sequence order
    return {"letter_acc": right.float().mean().item(),
            "first_lookup_acc": right[first].float().mean().item()}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--form", choices=("oracle", "episode", "key"), default="oracle")
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--warmup-steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--blocks", type=int, default=6, help="option lists a sequence (oracle form)")
    ap.add_argument("--matches", type=int, default=2, help="lookups after each list")
    ap.add_argument(
        "--loss",
        choices=("all", "letters"),
        default="all",
        help="train on every token, or on the letters only; letters only leaves the LM head "
        "so sure of letters that the next SFT stage starts at a loss of 9.8 and learns worse",
    )
    ap.add_argument("--eval-every", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    a.out.mkdir(parents=True, exist_ok=True)
    source = resolve_model(a.model, a.out / "init")
    proc = AutoProcessor.from_pretrained(source)
    model = AutoModelForImageTextToText.from_pretrained(source, dtype=torch.float32)
    builder = Builder(proc.tokenizer, a.form, a.blocks, a.matches, a.loss)
    log = {"settings": vars(a) | {"out": str(a.out), "source": source}}

    def losses(rng: random.Random) -> dict[str, torch.Tensor]:
        ids, _, _, target = builder.batch(rng, a.batch)
        return {"loss": model(input_ids=ids, labels=target).loss}

    train(model, proc, builder, losses, a, log, "drill.json")


def train(model, proc, builder: Builder, losses, a, log: dict, name: str) -> None:
    """The loop the drill and the rehearsal share: ``losses(rng)`` gives a step's named losses,
    their sum is the step's (AdamW, lr ``a.lr`` after ``a.warmup_steps`` linear warm-up steps,
    gradient norm clipped at 1); every ``a.eval_every`` steps the losses and the drill's letter
    accuracy on held-out sequences go to ``log["curve"]`` and stdout. Then the model, its
    processor and ``log`` (as OUT/``name``) are written to ``a.out``."""
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / a.warmup_steps))
    rng = random.Random(a.seed)
    log["curve"] = []
    t0 = time.time()
    for step in range(1, a.steps + 1):
        model.train()
        parts = losses(rng)
        sum(parts.values()).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        opt.zero_grad()
        if step % a.eval_every == 0 or step == a.steps:
            model.eval()
            row = {"step": step, **{k: round(v.item(), 4) for k, v in parts.items()}}
            row["seconds"] = round(time.time() - t0, 1)
            row |= accuracy(model, builder, seed=10_000 + a.seed, n=64)
            log["curve"].append(row)
            print(json.dumps(row), flush=True)
    log["seconds"] = round(time.time() - t0, 1)
    model.save_pretrained(a.out)
    proc.save_pretrained(a.out)
    (a.out / name).write_text(json.dumps(log, indent=1, default=str))


if __name__ == "__main__":
    main()
