import sys, torch
from pathlib import Path
from transformers import AutoModelForImageTextToText, AutoProcessor
from paravt.train.sft.dataset import StreamCollator, read_example
model_dir, traj, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
proc = AutoProcessor.from_pretrained(model_dir); tok = proc.tokenizer
model = AutoModelForImageTextToText.from_pretrained(model_dir).eval(); coll = StreamCollator(proc)
letters = {c: tok.encode(c)[0] for c in "ABCD"}
ans = tok.encode("<answer>")
files = sorted(Path(traj).glob("[0-9]*.pt"))[-n:]
ok = 0; preds = {}
with torch.no_grad():
    for f in files:
        ex = read_example(f); ids = ex["input_ids"]
        pos = max(i for i in range(len(ids)) if ids[i:i+len(ans)] == ans) + len(ans)
        b = coll([{"file": str(f)}]); b.pop("labels")
        lg = model(**b).logits[0, pos - 1]
        p = max(letters, key=lambda c: lg[letters[c]].item()); preds[p] = preds.get(p, 0) + 1
        ok += letters[p] == ids[pos]
print(model_dir, "letter acc", ok / len(files), preds)
