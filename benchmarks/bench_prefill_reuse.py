"""Prefill once per episode: what ``engine.reuse_cache`` saves, for 1, 2 and 3 tool rounds.

One episode at a time (the ``paravt infer`` case) through the real engine and the ``hf`` backend
(CPU, fp32, greedy), at K = 64, with reuse off (the baseline: every turn a full prefill through
``model.generate``, the vision tower over every frame seen so far) and on (the kept KV cache and
image features: a turn prefills its new tokens and encodes its new frames). Each (model, reuse)
pair runs in a fresh process, so its peak RSS is its own; the episodes of one process share one
warm-up. Every turn carries a pre-filled ``crop_video`` call, so an episode runs exactly its
number of tool rounds (then the forced answer).

Models: ``demo`` (the shipped toy-demo model, 5.5 M parameters, at its own 32x32 frames: one
visual token a frame) and ``bench`` (a random Qwen3-VL of ``paravt.models.tiny``'s ``bench``
preset, 120 M parameters, vision width 1024, whose vision tower and prefill dominate a turn).
On a 2-core machine the ``bench`` frames are small (``--bench-pixels``, 128x128 by default:
16 visual tokens a frame, ~1.3 k tokens of overview), not the evaluation budget's ~576.

Per case: episode wall, prefilled tokens (prompt tokens not served from a kept cache, over all
turns), tokens served from the cache, the final context, vision-tower calls and images, and the
process's peak RSS (``ru_maxrss``). Wall and CPU time (``process_time``) are each the fastest of
``--repeats`` episodes: on a shared host the CPU seconds are the steadier measure. The same
episode's token ids with and without reuse are compared too (``same_tokens``).

    python benchmarks/bench_prefill_reuse.py                          # both models, ~10 min
    python benchmarks/bench_prefill_reuse.py --models demo --rounds 1 --out /tmp/x.json   # smoke
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench_tool_exec import RESULTS, SHARED_VIDEOS

DEFAULT_VIDEO = SHARED_VIDEOS / "decord__flipping_a_pancake.mkv"
CALL = (
    '<tool_call>{"name": "crop_video", "arguments": {"video_path": "video", '
    '"start_time": 0, "end_time": 8}}</tool_call>'
)


def _backend(model: str, pixels: int):
    """``(backend, engine config)`` for one model; both keep the engine's defaults elsewhere."""
    from paravt.agent.config import CropSettings, EngineConfig, InferConfig
    from paravt.backends.hf import HFBackend
    from paravt.config import load_config
    from paravt.toy.demo import DEMO_MODEL, with_demo_defaults

    if model == "demo":
        cfg = load_config(InferConfig, base=with_demo_defaults({"backend": {"model": DEMO_MODEL}}))
        return HFBackend.from_config(cfg.backend), cfg.engine
    from paravt.models.tiny import build_tiny

    net, processor = build_tiny("qwen3-vl", seed=0, preset="bench")
    crop = CropSettings(min_pixels=pixels, max_pixels=pixels, max_frames=16)
    return HFBackend(net.eval(), processor, batch_size=1), EngineConfig(
        min_pixels=pixels, max_pixels=pixels, crop=crop
    )


def _count_encoder(backend) -> dict:
    """Count vision-tower calls and images (the backend calls ``model.get_image_features``)."""
    counts = {"calls": 0, "images": 0}
    inner = backend.model.get_image_features

    def counted(*args, **kwargs):
        counts["calls"] += 1
        counts["images"] += int(kwargs["image_grid_thw"].shape[0])
        return inner(*args, **kwargs)

    backend.model.get_image_features = counted
    return counts


def worker(
    model: str, reuse: bool, rounds: list[int], video: str, pixels: int, repeats: int
) -> dict:
    """One process: a warm-up episode, then ``repeats`` episodes per round count."""
    import dataclasses

    from paravt.agent.engine import EpisodeEngine
    from paravt.schema.episodes import EpisodeInput

    backend, engine = _backend(model, pixels)
    counts = _count_encoder(backend)
    base = dataclasses.replace(
        engine,
        frames=64,
        max_new_tokens=16,
        forced_tokens_mcq=8,
        think_prefix="<think>\nlook</think>\n" + CALL,
        reuse_cache=reuse,
    )
    inp = EpisodeInput("e", video, "What happens in the video?", ["A pan", "A cat", "A car"])
    EpisodeEngine(backend, dataclasses.replace(base, max_turns=1)).run([inp])  # warm-up
    cases = []
    for r in rounds:
        cfg = dataclasses.replace(base, max_turns=r)
        walls, cpus = [], []
        for _ in range(repeats):  # the host is shared: the fastest repeat is the least disturbed
            counts.update(calls=0, images=0)
            t0, c0 = time.perf_counter(), time.process_time()
            [rec] = EpisodeEngine(backend, cfg).run([inp])
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        cases.append(
            {
                "rounds": r,
                "status": rec.status,
                "error": rec.error,
                "episode_wall_s": round(min(walls), 3),
                "episode_wall_s_all": [round(w, 3) for w in walls],
                "episode_cpu_s": round(min(cpus), 3),
                "generate_s": round(rec.timings.generate_s, 3),
                "turns": len(rec.turns),
                "prefilled_tokens": sum(t.prompt_tokens - t.cached_tokens for t in rec.turns),
                "cached_tokens": sum(t.cached_tokens for t in rec.turns),
                "final_prompt_tokens": rec.turns[-1].prompt_tokens if rec.turns else 0,
                "final_context_tokens": len(rec.stream.token_ids),
                "image_tokens": rec.tokens.image,
                "vision_calls": counts["calls"],
                "vision_images": counts["images"],
                "token_ids": rec.stream.token_ids,
            }
        )
    params = sum(p.numel() for p in backend.model.parameters())
    return {
        "model": model,
        "reuse": reuse,
        "parameters": params,
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 3),
        "cases": cases,
    }


def run_worker(args, model: str, reuse: bool) -> dict:
    cmd = [sys.executable, __file__, "--worker", model, "1" if reuse else "0",
           "--rounds", *map(str, args.rounds), "--video", str(args.video),
           "--bench-pixels", str(args.bench_pixels), "--repeats", str(args.repeats)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        return {"model": model, "reuse": reuse, "exit_code": done.returncode,
                "stderr_tail": done.stderr.strip()[-1500:]}  # fmt: skip
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["process_wall_s"] = round(time.perf_counter() - t0, 1)
    return out


def compare(off: dict, on: dict) -> list[dict]:
    """Per round count: reuse against the baseline (reuse off) of the same model."""
    rows = []
    for a, b in zip(off.get("cases", []), on.get("cases", []), strict=False):
        rows.append(
            {
                "rounds": a["rounds"],
                "wall_ratio_off_over_on": round(a["episode_wall_s"] / b["episode_wall_s"], 2),
                "cpu_ratio_off_over_on": round(a["episode_cpu_s"] / b["episode_cpu_s"], 2),
                "prefilled_off": a["prefilled_tokens"],
                "prefilled_on": b["prefilled_tokens"],
                "final_context_tokens": b["final_context_tokens"],
                "vision_images_off": a["vision_images"],
                "vision_images_on": b["vision_images"],
                "same_tokens": a["token_ids"] == b["token_ids"],
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="+", default=["demo", "bench"], choices=["demo", "bench"])
    ap.add_argument("--rounds", nargs="+", type=int, default=[1, 2, 3])
    ap.add_argument("--video", type=Path, default=DEFAULT_VIDEO)
    ap.add_argument("--bench-pixels", type=int, default=128 * 128, help="bench model frame area")
    ap.add_argument("--repeats", type=int, default=1, help="episodes per case (fastest kept)")
    ap.add_argument("--out", type=Path, default=RESULTS / "bench_prefill_reuse.json")
    ap.add_argument("--worker", nargs=2, metavar=("MODEL", "REUSE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        model, reuse = args.worker
        out = worker(
            model, reuse == "1", args.rounds, str(args.video), args.bench_pixels, args.repeats
        )
        print(json.dumps(out))
        return 0
    if not args.video.is_file():
        print(f"video not found: {args.video} (pass --video)", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    result: dict = {
        "command": " ".join(
            ["python", "benchmarks/bench_prefill_reuse.py", *(argv or sys.argv[1:])]
        ),
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "load_avg_start": os.getloadavg(),
        },  # fmt: skip
        "video": args.video.name,
        "frames_k": 64,
        "bench_pixels": args.bench_pixels,
        "baseline": "the same model and episode with engine.reuse_cache=false, in its own process",
        "models": {},
    }
    for model in args.models:
        off, on = run_worker(args, model, False), run_worker(args, model, True)
        result["models"][model] = {"reuse_off": off, "reuse_on": on, "compare": compare(off, on)}
        for side in (off, on):
            for case in side.get("cases", []):
                case.pop("token_ids", None)
        print(json.dumps({model: result["models"][model]["compare"]}), file=sys.stderr)
    result["machine"]["load_avg_end"] = os.getloadavg()
    result["total_wall_s"] = round(time.perf_counter() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
