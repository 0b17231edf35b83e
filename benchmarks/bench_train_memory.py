"""Peak resident memory of ``paravt train`` (one RL step on CPU), before and after, in one run.

Two settings, each run once with this checkout's library and once with ``--before`` (a checkout
of the code to compare with, e.g. the merge base: ``git worktree add --detach /tmp/base SHA``),
imported through ``PYTHONPATH`` as earlier benchmarks did (``paravt.kernels`` stays this
checkout's: the kernels are the same). Each run is a fresh process; its peak is the kernel's
``ru_maxrss`` of that process. The machine is shared: resident memory is fair to compare, wall
time is not (recorded, not claimed).

- ``toy``: the toy experiment's RL step (docs/TOY_TASK.md, ``experiments/toy_paradox/run``):
  4 prompts × 4 generations, 4 loss micro-batches of 4, frames evidence, 32×32 frames, 384 new
  tokens a turn, the 5.5 M toy Qwen3-VL (random: its first turn is forced to five
  ``crop_video`` calls, so every episode runs windows of 16 frames), at each K of ``--toy-ks``.
- ``720p``: one group of 8 episodes on a 10-minute 720p video (the ``x264_veryfast`` row of
  ``bench_tool_exec.py``, encoded by ffmpeg at run time and cached, never committed) at K = 64
  with sub-agent evidence, the paper's pixel budgets (784-50,176 px) and the tiny random Qwen3-VL;
  the first turn forced to five 16 s windows (16 frames each at 1 fps). The image tokens of the
  episodes and of their sub-agents are recorded.
- ``720p_decode``: the decode side of such a group alone, when its episodes do not ask alike: the
  K = 64 overview and 40 different 16 s windows (8 episodes x 5 calls, 640 distinct frames) of
  the same video through ``VideoSource.overview`` and one ``execute_windows`` batch, then
  ``at_budget`` as the engine makes its images, at the paper's budget; once with frames decoded
  at full size and resized after the batch (``decoded-then-resized``, what the engine did
  before), once resized on the decode lanes (``resized-on-lanes``, ``budget_resizer`` passed
  down). This checkout's library only (the before code has no ``resize`` to pass).

    python benchmarks/bench_train_memory.py --before /tmp/28b-base
    python benchmarks/bench_train_memory.py --toy-ks 4 --cases toy --out /tmp/x.json   # smoke
    python benchmarks/bench_train_memory.py --cases 720p_decode --out /tmp/decode.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml
from bench_tool_exec import RESULTS, ensure_video

REPO = Path(__file__).resolve().parents[1]


def calls_text(windows: list[tuple[float, float]]) -> str:
    """A first turn that closes its thought and calls crop_video on each window."""
    blocks = "".join(
        '<tool_call>\n{"name": "crop_video", "arguments": {"video_path": "video", '
        f'"start_time": {a}, "end_time": {b}}}}}\n</tool_call>\n'
        for a, b in windows
    )
    return "I will look at five windows.</think>\n" + blocks.rstrip("\n")


#: measured in the child process: runs the recipe, writes peak RSS and the episodes' sizes
DRIVER = r"""
import json, resource, sys, threading, time
from paravt.train.run import load_command_config, run_training
cfg = load_command_config(sys.argv[1], ())
seen = []
where = {}  # --trace: innermost paravt/trl/transformers function -> highest RSS seen in it (GB)
def trace(main=threading.get_ident(), pages=open("/proc/self/statm")):
    size = resource.getpagesize() / 2**30
    while True:
        pages.seek(0)
        rss = int(pages.read().split()[1]) * size
        frame, label = sys._current_frames().get(main), "other"
        while frame is not None:
            name = frame.f_code.co_filename
            for lib in ("paravt/", "trl/", "transformers/"):
                if lib in name:
                    label = lib + name.split(lib)[-1] + ":" + frame.f_code.co_name
                    break
            else:
                frame = frame.f_back
                continue
            break
        where[label] = max(where.get(label, 0.0), rss)
        time.sleep(0.01)
if len(sys.argv) > 3:
    threading.Thread(target=trace, daemon=True).start()
def attach(trainer):
    trainer.keep_last_rollout = True
    original = trainer._generate_and_score_completions
    def wrapped(inputs):
        out = original(inputs)
        for r in trainer.last_rollout.get("records", []):
            subs = getattr(r, "subagents", []) or []
            seen.append({
                "k": r.frames_k, "status": r.status, "images": len(r.stream.images),
                "image_tokens": r.tokens.image, "tokens": r.tokens.total,
                "calls_ok": sum(c.status == "ok" for c in r.calls),
                "subagents": len(subs),
                "subagent_image_tokens": sum(s.tokens.image for s in subs),
            })
        trainer.last_rollout = {}
        return out
    trainer._generate_and_score_completions = wrapped
t0 = time.perf_counter()
summary = run_training(cfg, on_trainer=attach)
out = {"peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
       "wall_s": time.perf_counter() - t0, "steps": summary["global_step"], "episodes": seen}
if where:
    ranked = sorted(where.items(), key=lambda kv: -kv[1])  # the top, and paravt's own places
    top = ranked[:6] + [kv for kv in ranked[6:] if kv[0].startswith("paravt/")]
    out["rss_gb_by_where"] = {k: round(v, 3) for k, v in top}
open(sys.argv[2], "w").write(json.dumps(out))
"""


#: measured in the child process: decodes a group's overview and 40 distinct windows, keeps the
#: frames as the engine does until its images are made, and writes peak RSS
DECODE_DRIVER = r"""
import json, resource, sys
from paravt.agent.vision import at_budget, budget_resizer
from paravt.tools.batch import execute_windows
from paravt.tools.results import CropConfig, WindowRequest
from paravt.video import VideoSource
video, mode, out = sys.argv[1:4]
lo, hi, arch = 784, 50176, "qwen3-vl"
resize = budget_resizer(arch, lo, hi) if mode == "resized-on-lanes" else None
src = VideoSource(video)
start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
overview = src.overview(64, workers=0, resize=resize)
reqs = [WindowRequest(video, {"start_time": 5.0 + 14.9 * i, "end_time": 21.0 + 14.9 * i}, key=i)
        for i in range(40)]
batch = execute_windows(reqs, CropConfig(max_frames=16), sources={video: src}, resize=resize)
images = [at_budget(overview.parts, arch, lo, hi)]
images += [at_budget(r.clip.parts, arch, lo, hi) for r in batch.results if r.ok]
kept = {id(p.untyped_storage()): p.untyped_storage().nbytes() for ps in images for p in ps}
open(out, "w").write(json.dumps({
    "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    "rss_before_decoding_gb": start, "calls_ok": batch.stats.calls_ok,
    "distinct_frames": batch.stats.distinct_frames + len(overview),
    "frame_size": list(images[0][0].shape), "images_kept_mb": sum(kept.values()) / 2**20,
}))
"""


def run_driver(
    driver: str, args: list[str], out: Path, pythonpath: str | None = None
) -> tuple[dict, dict | None]:
    """One fresh process of ``driver`` (a ``python -c`` script given ``args``, which writes its
    JSON to ``out``): ``(result, what it wrote)``. ``result`` holds the exit code and wall time,
    and the stderr tail when nothing was written (then ``None``). ``pythonpath`` picks the
    library (a "before" checkout); without it, this checkout's."""
    out.unlink(missing_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    else:
        env.pop("PYTHONPATH", None)
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", driver, *args],
        env=env,
        cwd="/tmp",
        capture_output=True,
        text=True,
        check=False,
    )
    result: dict = {
        "exit_code": done.returncode,
        "process_wall_s": round(time.perf_counter() - t0, 1),
    }
    if done.returncode != 0 or not out.is_file():
        result["stderr_tail"] = done.stderr.strip()[-1500:]
        return result, None
    return result, json.loads(out.read_text())


def rounded(values: dict) -> dict:
    """``values`` with floats to 3 decimals."""
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in values.items()}


def measure_decode(video: Path, mode: str, work: Path) -> dict:
    """One fresh process of ``DECODE_DRIVER`` in ``mode``; this checkout's library."""
    work.mkdir(parents=True, exist_ok=True)
    out = work / f"decode-{mode}.json"
    result, got = run_driver(DECODE_DRIVER, [str(video), mode, str(out)], out)
    if got is not None:
        result.update(rounded(got))
    return result


def toy_recipe(toy: Path, k: int, run_dir: Path) -> dict:
    pixels = 1024  # 32x32: one vision token a frame, as the toy experiment
    windows = [(i * 24.0, i * 24.0 + 16.0) for i in range(5)]
    return {
        "model": "tiny:qwen3-vl:toy",
        "output_dir": str(run_dir),
        "data": {"path": str(toy / "train.jsonl"), "video_root": str(toy), "limit": 4},
        "engine": {
            "mode": "parallel", "evidence": "frames", "frames": k, "max_turns": 3,
            "max_parallel": 5, "max_new_tokens": 384, "min_pixels": pixels,
            "max_pixels": pixels, "think_prefix": "<think>\n",
            "crop": {"max_frames": 16, "min_pixels": pixels, "max_pixels": pixels},
        },
        "trainer": {
            "use_cpu": True, "bf16": False, "gradient_checkpointing": False,
            "learning_rate": 3.0e-5, "beta": 0.01, "num_generations": 4,
            "per_device_train_batch_size": 4, "gradient_accumulation_steps": 4,
            "max_steps": 1, "max_completion_length": 1536, "save_steps": 1000,
            "logging_steps": 1, "report_to": [], "seed": 0, "dataloader_num_workers": 0,
            "frames_gating": False, "temperature": 1.0,
            "first_turn_text": calls_text(windows),
        },
    }  # fmt: skip


def video_recipe(data: Path, video_root: Path, run_dir: Path) -> dict:
    windows = [(60.0 + i * 100.0, 76.0 + i * 100.0) for i in range(5)]
    return {
        "model": "tiny:qwen3-vl",
        "output_dir": str(run_dir),
        "data": {"path": str(data), "video_root": str(video_root)},
        "engine": {
            "mode": "parallel", "evidence": "subagent", "frames": 64, "max_turns": 3,
            "max_parallel": 5, "max_new_tokens": 32, "min_pixels": 784, "max_pixels": 50176,
            "think_prefix": "<think>\n",
            "crop": {"max_frames": 16, "min_pixels": 784, "max_pixels": 50176},
        },
        "trainer": {
            "use_cpu": True, "bf16": False, "gradient_checkpointing": False,
            "learning_rate": 1.0e-5, "beta": 0.0, "num_generations": 8,
            "per_device_train_batch_size": 8, "gradient_accumulation_steps": 1,
            "max_steps": 1, "max_completion_length": 256, "save_steps": 1000,
            "logging_steps": 1, "report_to": [], "seed": 0, "dataloader_num_workers": 0,
            "frames_gating": False, "temperature": 1.0, "subagent_in_loss": False,
            "first_turn_text": calls_text(windows),
        },
    }  # fmt: skip


def measure(recipe: dict, work: Path, pythonpath: str | None, trace: bool = False) -> dict:
    shutil.rmtree(recipe["output_dir"], ignore_errors=True)  # a fresh run folder each time
    work.mkdir(parents=True, exist_ok=True)
    cfg, out = work / "recipe.yaml", work / "measured.json"
    cfg.write_text(yaml.safe_dump(recipe, sort_keys=False))
    args = [str(cfg), str(out)] + (["trace"] if trace else [])
    result, got = run_driver(DRIVER, args, out, pythonpath)
    if got is None:
        return result
    eps = got.pop("episodes")
    result.update(rounded(got))
    result["episodes"] = len(eps)
    result["status"] = sorted({e["status"] for e in eps})
    for key in (
        "images",
        "image_tokens",
        "tokens",
        "calls_ok",
        "subagents",
        "subagent_image_tokens",
    ):
        values = [e[key] for e in eps]
        result[key] = (
            {"min": min(values), "max": max(values), "sum": sum(values)} if values else None
        )
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--before", type=Path, default=None, help="Checkout of the code to compare with."
    )
    ap.add_argument("--before-label", default="before")
    ap.add_argument("--cases", default="toy,720p")
    ap.add_argument("--toy-ks", default="4,16,64")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/paravt-bench"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/paravt-bench/train-memory"))
    ap.add_argument("--out", type=Path, default=RESULTS / "bench_train_memory.json")
    ap.add_argument(
        "--trace",
        action="store_true",
        help="Sample RSS every 10 ms and record the highest seen in each innermost "
        "paravt/trl/transformers function (rss_gb_by_where: the top 6 and every paravt one): "
        "where the peak is.",
    )
    args = ap.parse_args(argv)

    variants = [("after", None)]
    if args.before is not None:
        variants.insert(0, (args.before_label, str(args.before.resolve() / "src")))
    cases = args.cases.split(",")
    rows = []
    if "toy" in cases:
        toy = args.cache_dir / "toy-task"
        if not (toy / "train.jsonl").is_file():
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "paravt.cli.main",
                    "make-toy-task",
                    str(toy),
                    "--n",
                    "4",
                    "--seed",
                    "0",
                    "--set",
                    'question_types=["mcq"]',
                    "--set",
                    "visibility_videos=0",
                ],  # fmt: skip
                check=True,
                cwd="/tmp",
            )
        for k in (int(x) for x in args.toy_ks.split(",")):
            for label, path in variants:
                print(f"toy K={k} {label} ...", file=sys.stderr, flush=True)
                run_dir = args.work / f"toy-k{k}-{label}"
                m = measure(toy_recipe(toy, k, run_dir / "run"), run_dir, path, args.trace)
                rows.append({"case": "toy", "k": k, "code": label, **m})
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    video_info = None
    if "720p" in cases or "720p_decode" in cases:
        video, video_info = ensure_video(args.cache_dir, "x264_veryfast", args.minutes)
    if "720p_decode" in cases:
        for mode in ("decoded-then-resized", "resized-on-lanes"):
            print(f"720p decode, 40 distinct windows, {mode} ...", file=sys.stderr, flush=True)
            m = measure_decode(video, mode, args.work / "720p-decode")
            rows.append({"case": "720p_decode_40_windows", "k": 64, "code": mode, **m})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if "720p" in cases:
        data = args.work / "720p.jsonl"
        data.parent.mkdir(parents=True, exist_ok=True)
        data.write_text(
            json.dumps(
                {
                    "id": "long",
                    "video": video.name,
                    "question": "What happens?",
                    "options": ["A pan", "A rabbit", "A car"],
                    "answer": "A",
                    "question_type": "mcq",
                }
            )
            + "\n"  # fmt: skip
        )
        for label, path in variants:
            print(f"720p K=64 group of 8 {label} ...", file=sys.stderr, flush=True)
            run_dir = args.work / f"720p-{label}"
            m = measure(
                video_recipe(data, video.parent, run_dir / "run"), run_dir, path, args.trace
            )
            rows.append({"case": "720p_group8", "k": 64, "code": label, **m})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    result = {
        "benchmark": "train_memory",
        "before": str(args.before) if args.before else None,
        "video": video_info,
        "note": "peak RSS per fresh process (ru_maxrss); the host is shared, so wall times are "
        "recorded but not comparable",
        "rows": rows,
        "command": " ".join(
            [Path(sys.argv[0]).name] + (argv if argv is not None else sys.argv[1:])
        ),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
