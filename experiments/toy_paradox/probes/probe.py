"""Perception probe: can the toy model read the needle colour from the SFT streams?

Colour accuracy is teacher-forced at the colour word of the final think
("The windows frames show a <colour> square ..."), over the 6 palette colours.
"""
import argparse, json, random, time, sys
from pathlib import Path
import torch
from transformers import AutoModelForImageTextToText, AutoProcessor
from paravt.train.sft.dataset import StreamCollator, read_example
from paravt.toy.task import PALETTE

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True)
ap.add_argument("--traj", required=True)
ap.add_argument("--steps", type=int, default=0)
ap.add_argument("--mask", default="colour", choices=["colour", "all", "colour+answer"])
ap.add_argument("--lr", type=float, default=3e-4)
ap.add_argument("--bs", type=int, default=8)
ap.add_argument("--eval-every", type=int, default=25)
ap.add_argument("--n-eval", type=int, default=64)
ap.add_argument("--out", default=None)
ap.add_argument("--seed", type=int, default=0)
a = ap.parse_args()
torch.manual_seed(a.seed)
torch.set_num_threads(2)
proc = AutoProcessor.from_pretrained(a.model)
tok = proc.tokenizer
model = AutoModelForImageTextToText.from_pretrained(a.model, dtype=torch.float32)
coll = StreamCollator(proc)
files = sorted(Path(a.traj).glob("[0-9]*.pt"))
n_eval = a.n_eval
train_files, eval_files = files[:-n_eval], files[-n_eval:]
enc = {c: tok.encode(" " + c) for c in PALETTE}

def colour_span(ids, labels):
    """(colour, position of first colour token) of the last colour word in the labels."""
    best = None
    for c, e in enc.items():
        for i in range(len(ids) - len(e), -1, -1):
            if ids[i:i + len(e)] == e and labels[i] != -100:
                if best is None or i > best[1]:
                    best = (c, i)
                break
    return best

def prep(f):
    ex = read_example(f)
    c, pos = colour_span(ex["input_ids"], ex["labels"])
    return ex, c, pos

def batch_of(fs, mask):
    rows = []
    meta = []
    for f in fs:
        ex, c, pos = prep(f)
        labels = list(ex["labels"])
        if mask != "all":
            keep = set(range(pos, pos + len(enc[c])))
            if mask == "colour+answer":
                # the answer letter: the token after the last "<answer>"
                s = tok.decode(ex["input_ids"])
                ans = [i for i, l in enumerate(labels) if l != -100]
                # last 3 generated tokens before <|im_end|> include the letter
                keep |= set(ans[-6:])
            labels = [l if i in keep else -100 for i, l in enumerate(labels)]
        ex = dict(ex, labels=labels)
        p = Path("/tmp") / f"probe_{f.stem}_{mask}.pt"
        torch.save(ex, p)
        rows.append({"file": str(p)})
        meta.append((c, pos))
    return coll(rows), meta

first = {c: e[0] for c, e in enc.items()}
def colour_scores(logits, pos, gold):
    """6-way scores at the colour word (two tokens deep where first tokens are shared)."""
    lp0 = logits[pos - 1].log_softmax(-1)
    out = {}
    for c, e in enc.items():
        s = lp0[e[0]].item()
        out[c] = s
    # resolve shared first tokens with the second token's logits when gold shares it
    shared = [c for c in enc if enc[c][0] == enc[gold][0]]
    if len(shared) > 1:
        lp1 = logits[pos].log_softmax(-1)
        for c in shared:
            out[c] = lp0[enc[c][0]].item() + lp1[enc[c][1]].item()
    return out

@torch.no_grad()
def evaluate():
    model.eval()
    correct, preds = 0, {}
    for i in range(0, len(eval_files), 4):
        b, meta = batch_of(eval_files[i:i + 4], "all")
        out = model(**{k: v for k, v in b.items() if k != "labels"})
        for r, (c, pos) in enumerate(meta):
            sc = colour_scores(out.logits[r], pos, c)
            p = max(sc, key=sc.get)
            preds[p] = preds.get(p, 0) + 1
            correct += p == c
    model.train()
    return correct / len(eval_files), preds

opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
log = []
acc, preds = evaluate()
print(json.dumps({"step": 0, "colour_acc": acc, "preds": preds}), flush=True)
log.append({"step": 0, "colour_acc": acc})
rng = random.Random(a.seed)
t0 = time.time()
for step in range(1, a.steps + 1):
    fs = rng.sample(train_files, a.bs)
    b, _ = batch_of(fs, a.mask)
    out = model(**b)
    out.loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step(); opt.zero_grad()
    if step % a.eval_every == 0 or step == a.steps:
        acc, preds = evaluate()
        row = {"step": step, "loss": round(out.loss.item(), 4), "colour_acc": acc, "preds": preds,
               "s": round(time.time() - t0, 1)}
        print(json.dumps(row), flush=True)
        log.append(row)
if a.out:
    Path(a.out).write_text(json.dumps({"args": vars(a), "log": log}, indent=1))
