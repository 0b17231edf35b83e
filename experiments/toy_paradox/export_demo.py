#!/usr/bin/env python
"""The quick run's tool-SFT checkpoint as the shipped demo model (``--model toy-demo``).

    python experiments/toy_paradox/export_demo.py --out OUT      # OUT: a finished quick run

(``run --quick --out OUT --export-demo`` runs it at the end.) It writes
``src/paravt/toy/demo_model/``: ``OUT/sft``'s weights (the 90-step checkpoint, or the model
``--select`` / ``--average`` made) in fp16 (half the bytes; the CPU backend loads them back as
fp32, so only the rounding can change an answer), its tokenizer, processor
and chat template, and ``demo.yaml``: the engine settings of the run's K = 4 eval (without the
system prompt's host path; ``paravt.toy.demo`` puts the packaged toy prompt back) and the eval
of both weight sets, answer by answer. The fp16 eval (``OUT/eval/demo-fp16-4``, skipped when it
exists, as every step of ``run`` is) goes through ``--model toy-demo`` itself, so it also checks
that the alias brings the settings the model was evaluated under.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import torch
import yaml
from safetensors.torch import load_file, save_file

from paravt.toy.demo import CARD

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEMO = REPO / "src" / "paravt" / "toy" / "demo_model"
#: the files of the SFT model folder the demo ships as they are (the weights become fp16)
FILES = ("config.json", "generation_config.json", "chat_template.jinja",
         "processor_config.json", "tokenizer.json", "tokenizer_config.json")  # fmt: skip
#: the quick run's K = 4 eval of the fp32 checkpoint (run: evaluate(..., "sft-strong", 4, ...))
REF = "sft-strong-4"
LIMIT = 60


#: what the quick run's SFT model is, by its settings' select.model (run --select / --average)
MODEL_KINDS = {
    None: "the 90-step checkpoint",
    "best": "the 150-step run's checkpoint with the best validation accuracy",
    "average": "the mean of the 150-step run's checkpoints from step 90 on",
}


def rebuild_command(results: dict) -> str:
    """The ``run`` command that rebuilds this quick run's SFT model, from its results.json."""
    s = results["settings"]
    flags = {None: "", "best": " --select", "average": " --average"}[
        s.get("select", {}).get("model")
    ]
    threads = f" --threads {results['threads']}" if results.get("threads") else ""
    seed = f" --data-seed {s['data_seed']}" if s.get("data_seed") else ""
    return f"experiments/toy_paradox/run --quick{flags}{threads}{seed} --out OUT --export-demo"


def git_head() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE,
                             capture_output=True, text=True, check=True)  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def headline(folder: Path) -> dict:
    m = json.loads((folder / "summary.json").read_text())["metrics"]
    return {"accuracy": m["variants"]["robust"]["accuracy"], "n": m["n"],
            "errors": m["errors"], "tool_usage_rate": m["tools"]["usage_rate"],
            "avg_calls": m["tools"]["avg_calls"]}  # fmt: skip


def answers(folder: Path) -> dict:
    rows = (json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines())
    return {r["id"]: (r["answer_text"], r["score"]["correct"]) for r in rows}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="a finished quick run's OUT")
    out = ap.parse_args().out.resolve()
    model, toy = out / "sft", out / "toy"
    engine = yaml.safe_load((out / "configs" / "eval-4-parallel.yaml").read_text())["engine"]
    engine.pop("system_prompt")  # a host path
    results = json.loads((out / "results.json").read_text())
    how = MODEL_KINDS[results["settings"].get("select", {}).get("model")]
    shutil.rmtree(DEMO, ignore_errors=True)
    DEMO.mkdir(parents=True)
    for name in FILES:
        shutil.copy(model / name, DEMO / name)
    weights = load_file(model / "model.safetensors")
    half = {k: v.to(torch.float16) if v.is_floating_point() else v for k, v in weights.items()}
    save_file(half, DEMO / "model.safetensors", metadata={"format": "pt"})
    config = json.loads((DEMO / "config.json").read_text())
    config["dtype"] = "float16"
    (DEMO / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    card = {
        "what": f"the toy task's quick-mode tool-SFT model ({how}; experiments/toy_paradox/LOG.md, "
        "'The shipped demo model'), weights in fp16; `paravt infer VIDEO ... --model toy-demo`",
        # the thread count picks the model (experiments/toy_paradox/LOG.md, "Two builds of
        # the quick chain"); the averaged chain's builds agree more closely ("A robust chain")
        "rebuild": rebuild_command(results),
        "commit": git_head(),
        "parameters": sum(v.numel() for v in weights.values()),
        "system_prompt": "paravt/toy/prompts/system_parallel.txt (system_direct.txt with "
        "--mode direct)",
        "engine": engine,
    }
    (DEMO / CARD).write_text(yaml.safe_dump(card, sort_keys=False))
    fp16 = out / "eval" / "demo-fp16-4"
    command = ["paravt", "eval", "--benchmark", "jsonl", "--data", str(toy), "--videos",
               str(toy), "--model", "toy-demo", "--out", str(fp16), "--limit", str(LIMIT)]  # fmt: skip
    if not (fp16 / "summary.json").is_file():
        cmd = [sys.executable, "-m", "paravt.cli.main", *command[1:]]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    ref = out / "eval" / REF
    if not (ref / "summary.json").is_file():
        sys.exit(f"{ref} is missing (the quick run's K = 4 eval): rerun once it exists")
    a, b = answers(ref), answers(fp16)
    same = sum(a[k] == b.get(k) for k in a)
    shown = " ".join(command).replace(str(out), "OUT")
    card["eval"] = {
        "set": f"toy eval split (make-toy-task --seed 0 --split eval), first {LIMIT} mcq, "
        "K = 4, greedy, robust reading",
        "fp32": {**headline(ref), "command":
                 results["commands"][f"eval-{REF}"]["command"].replace(str(out), "OUT")},
        "fp16": {**headline(fp16), "command": shown},
        "same answer and score": f"{same} / {len(a)}",
    }  # fmt: skip
    (DEMO / CARD).write_text(yaml.safe_dump(card, sort_keys=False))
    size = sum(p.stat().st_size for p in DEMO.iterdir()) / 1e6
    print(f"demo model: {DEMO.relative_to(REPO)} ({size:.1f} MB); fp32 "
          f"{card['eval']['fp32']['accuracy']:.1%}, fp16 {card['eval']['fp16']['accuracy']:.1%}, "
          f"{same} / {len(a)} answers the same")  # fmt: skip


if __name__ == "__main__":
    main()
