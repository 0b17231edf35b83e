"""Synthetic perception probe on real toy frames: N frames (the needle among them) -> colour word.

Short sequences (image tokens + a few text tokens), so the cost is perception only.
"""
import argparse, json, random, time
from pathlib import Path
import torch
from transformers import AutoModelForImageTextToText, AutoProcessor
from paravt.agent.chat import ChatCodec
from paravt.schema.episodes import ImageItem
from paravt.agent.vision import preprocess
from paravt.toy.detect import needle_colour
from paravt.toy.task import PALETTE
from paravt.rollout.streams import mm_token_type_ids

ap = argparse.ArgumentParser()
ap.add_argument("--model", required=True)
ap.add_argument("--traj", required=True)
ap.add_argument("--n", default="8", help="N or a schedule N1:steps,N2:steps")
ap.add_argument("--eval-n", type=int, default=None)
ap.add_argument("--pixels", type=int, default=4096)
ap.add_argument("--steps", type=int, default=150)
ap.add_argument("--lr", type=float, default=3e-4)
ap.add_argument("--bs", type=int, default=8)
ap.add_argument("--pad-text", type=int, default=0, help="filler text tokens before the frames")
ap.add_argument("--eval-every", type=int, default=25)
ap.add_argument("--out")
a = ap.parse_args()
sched = [(int(x.split(":")[0]), int(x.split(":")[1]) if ":" in x else 10**9) for x in str(a.n).split(",")]
def n_at(step):
    t = 0
    for n, k in sched:
        t += k
        if step <= t: return n
    return sched[-1][0]
EVAL_N = a.eval_n or sched[-1][0]
torch.manual_seed(0); torch.set_num_threads(2)
proc = AutoProcessor.from_pretrained(a.model); tok = proc.tokenizer; codec = ChatCodec(proc)
model = AutoModelForImageTextToText.from_pretrained(a.model, dtype=torch.float32)
pad_id = codec.image_token_id
vs, ve = tok.convert_tokens_to_ids("<|vision_start|>"), tok.convert_tokens_to_ids("<|vision_end|>")
merge = 4
per_frame = a.pixels // (16 * 16) // merge
items = []
for f in sorted(Path(a.traj).glob("[0-9]*.pt")):
    ex = torch.load(f, weights_only=True)
    fr = ex["frames"]
    cols = [needle_colour(x) for x in fr]
    hits = [i for i, c in enumerate(cols) if c]
    if not hits:
        continue
    items.append((fr, cols, hits))
print("examples", len(items), flush=True)
enc = {c: tok.encode(" " + c) for c in PALETTE}
head = tok.encode("<|im_start|>user\n")
filler = tok.encode(" grey" * a.pad_text)[: a.pad_text]
tail = tok.encode("\nWhat colour?<|im_end|>\n<|im_start|>assistant\nIt is")
rng = random.Random(0)

def sample(item, r, n):
    fr, cols, hits = item
    h = r.choice(hits)
    others = [i for i, c in enumerate(cols) if not c]
    pick = sorted(r.sample(others, min(n - 1, len(others))) + [h])
    frames = [fr[i] for i in pick]
    colour = cols[h]
    ids = head + filler
    for _ in frames:
        ids += [vs] + [pad_id] * per_frame + [ve]
    pos = len(ids) + len(tail)
    ids = ids + tail + enc[colour]
    labels = [-100] * pos + enc[colour]
    return frames, ids, labels, colour, pos

def collate(samples):
    W = max(len(s[1]) for s in samples)
    ids = torch.full((len(samples), W), tok.pad_token_id or 0); lab = torch.full((len(samples), W), -100)
    att = torch.zeros((len(samples), W), dtype=torch.long)
    imgs = []
    for b, (frames, i, l, c, p) in enumerate(samples):
        ids[b, :len(i)] = torch.tensor(i); lab[b, :len(l)] = torch.tensor(l); att[b, :len(i)] = 1
        imgs += [ImageItem(data=x, time=0.0, source="tool", min_pixels=a.pixels, max_pixels=a.pixels) for x in frames]
    pv, grid = preprocess(imgs, codec)
    return dict(input_ids=ids, attention_mask=att, labels=lab, pixel_values=pv, image_grid_thw=grid,
                mm_token_type_ids=mm_token_type_ids(ids, pad_id))

train, test = items[:-64], items[-64:]
er = random.Random(1)
test_samples = [sample(it, er, EVAL_N) for it in test]

@torch.no_grad()
def evaluate():
    model.eval(); ok = 0; preds = {}
    for i in range(0, len(test_samples), 16):
        ss = test_samples[i:i + 16]
        b = collate(ss); b.pop("labels")
        lg = model(**b).logits
        for r, s in enumerate(ss):
            lp = lg[r, s[4] - 1].log_softmax(-1)
            sc = {c: lp[e[0]].item() for c, e in enc.items()}
            shared = [c for c in enc if enc[c][0] == enc[s[3]][0]]
            if len(shared) > 1:
                lp1 = lg[r, s[4]].log_softmax(-1)
                for c in shared: sc[c] += lp1[enc[c][1]].item()
            p = max(sc, key=sc.get); preds[p] = preds.get(p, 0) + 1; ok += p == s[3]
    model.train(); return ok / len(test_samples), preds

opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.0)
log = []; t0 = time.time()
acc, preds = evaluate(); print(json.dumps({"step": 0, "acc": acc}), flush=True)
for step in range(1, a.steps + 1):
    b = collate([sample(rng.choice(train), rng, n_at(step)) for _ in range(a.bs)])
    loss = model(**b).loss; loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0); opt.step(); opt.zero_grad()
    if step % a.eval_every == 0:
        acc, preds = evaluate()
        row = {"step": step, "loss": round(loss.item(), 3), "acc": acc, "preds": preds, "s": round(time.time() - t0)}
        print(json.dumps(row), flush=True); log.append(row)
if a.out: Path(a.out).write_text(json.dumps({"args": vars(a), "log": log}))
