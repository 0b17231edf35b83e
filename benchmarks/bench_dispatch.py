"""Parallel vs sequential dispatch of the same crop_video calls, through the episode engine.

Claim (docs/PROTOCOL.md §1, §3): issuing a turn's windows together — one batched video pass per
round for the whole batch of episodes — is faster than one call per turn (LongVT-style sequential
dispatch), for exactly the same windows and the same frames.

Setup: ``--episodes`` episodes over one generated long video, each asking for ``--calls`` windows
of 10-20 s spread over the video (the same windows in both modes). Generation is a scripted
backend in token space (tiny model's processor), so the measured time is the engine's own work:
overview decode, window decode, frame preprocessing (``paravt.kernels``), chat-template deltas —
no model compute, which would only add a per-round cost and favour parallel dispatch further.

- ``parallel``: turn 0 holds all calls, turn 1 answers → 1 tool round.
- ``sequential``: one call per turn → ``calls`` tool rounds, then the answer.

Runs alternate (parallel, sequential, ...) so machine load hits both alike; medians of
``--repeats`` after one warm-up each. Output: ``benchmarks/results/bench_dispatch.json``.

    python benchmarks/bench_dispatch.py --minutes 3 --episodes 8 --calls 3 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def ensure_video(cache: Path, minutes: float) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    seconds = round(minutes * 60)
    out = cache / f"dispatch_testsrc2_{seconds}s_320x180_30fps.mp4"
    if not out.exists():
        cmd = [
            shutil.which("ffmpeg") or "ffmpeg",
            "-y",
            "-loglevel",
            "error",
            "-f",
            "lavfi",
            "-i",
            f"testsrc2=size=320x180:rate=30:duration={seconds}",
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-pix_fmt",
            "yuv420p",
            str(out),
        ]
        subprocess.run(cmd, check=True)
    return out


def windows_for(
    episodes: int, calls: int, duration: float, seed: int
) -> list[list[tuple[float, float]]]:
    rng = random.Random(seed)
    out = []
    for _ in range(episodes):
        wins = []
        for _ in range(calls):
            length = rng.uniform(10, 20)
            start = rng.uniform(0, max(0.0, duration - length - 1))
            wins.append((round(start, 1), round(start + length, 1)))
        out.append(wins)
    return out


def call_text(start: float, end: float) -> str:
    args = {"video_path": "video", "start_time": start, "end_time": end}
    return "<tool_call>" + json.dumps({"name": "crop_video", "arguments": args}) + "</tool_call>"


def scripts(wins: list[list[tuple[float, float]]], mode: str) -> dict[str, list[str]]:
    out = {}
    for i, ws in enumerate(wins):
        if mode == "parallel":
            turns = [
                "<think>Look at all candidate moments.</think>" + "".join(call_text(*w) for w in ws)
            ]
        else:
            turns = ["<think>Look at one moment.</think>" + call_text(*w) for w in ws]
        out[f"e{i}"] = turns + ["<think>Done.</think><answer>A</answer>"]
    return out


def run_once(mode: str, wins, video: Path, processor, args) -> dict:
    from paravt.agent.config import CropSettings, EngineConfig
    from paravt.agent.engine import EpisodeEngine
    from paravt.backends.scripted import ScriptedBackend
    from paravt.schema.episodes import EpisodeInput

    backend = ScriptedBackend(scripts(wins, mode), processor=processor)
    cfg = EngineConfig(
        mode=mode,
        max_turns=max(args.calls, 1),
        max_parallel=max(args.calls, 5),
        frames=args.frames,
        min_pixels=784,
        max_pixels=50176,
        crop=CropSettings(workers=args.workers),
        keep_images=False,
    )
    inputs = [
        EpisodeInput(f"e{i}", str(video), "What is shown?", ["x", "y"]) for i in range(len(wins))
    ]
    engine = EpisodeEngine(backend, cfg)
    t0 = time.perf_counter()
    recs = engine.run(inputs)
    wall = time.perf_counter() - t0
    bad = [r.error for r in recs if r.status != "ok"]
    if bad:
        raise RuntimeError(f"{mode}: episode errors: {bad[:2]}")
    frames = sorted(
        (c.start, c.end, tuple(c.times)) for r in recs for c in r.calls if c.status == "ok"
    )
    return {
        "wall_s": wall,
        "rounds": len(backend.batches),
        "tool_passes": len(engine.tool_stats),
        "video_opens": sum(engine.video_opens.values())
        + sum(sum(s.opens.values()) for s in engine.tool_stats),
        "frames_decoded": sum(s.frames_decoded for s in engine.tool_stats),
        "frames_returned": sum(s.frames_returned for s in engine.tool_stats),
        "calls_ok": sum(r.tool_counts.executed_ok for r in recs),
        "decode_s": sum(r.timings.decode_s for r in recs),
        "preprocess_s": sum(r.timings.preprocess_s for r in recs),
        "_frames": frames,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--minutes", type=float, default=3.0, help="length of the generated video")
    ap.add_argument("--episodes", type=int, default=8)
    ap.add_argument("--calls", type=int, default=3, help="windows per episode")
    ap.add_argument("--frames", type=int, default=16, help="overview frames per episode")
    ap.add_argument("--workers", type=int, default=2, help="decoder workers of the tool pass")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "paravt-bench")
    ap.add_argument("--out", type=Path, default=RESULTS / "bench_dispatch.json")
    args = ap.parse_args(argv)

    import torch
    from transformers import AutoProcessor

    from paravt.models.tiny import make_tiny_model

    torch.set_num_threads(1)
    video = ensure_video(args.cache, args.minutes)
    tiny = args.cache / "tiny-qwen3-vl"
    if not (tiny / "config.json").exists():
        make_tiny_model(tiny, "qwen3-vl")
    processor = AutoProcessor.from_pretrained(str(tiny))
    wins = windows_for(args.episodes, args.calls, args.minutes * 60, args.seed)

    runs: dict[str, list[dict]] = {"parallel": [], "sequential": []}
    for rep in range(args.repeats + 1):  # repetition 0 is the warm-up
        for mode in ("parallel", "sequential"):
            r = run_once(mode, wins, video, processor, args)
            if rep:
                runs[mode].append(r)
            print(
                f"[{rep}] {mode:10s} {r['wall_s']:.3f}s rounds={r['rounds']} opens={r['video_opens']}",
                file=sys.stderr,
            )
    same = runs["parallel"][0]["_frames"] == runs["sequential"][0]["_frames"]
    summary = {}
    for mode, rs in runs.items():
        summary[mode] = {
            "wall_s_median": statistics.median(r["wall_s"] for r in rs),
            "wall_s_all": [round(r["wall_s"], 4) for r in rs],
            **{k: v for k, v in rs[0].items() if k not in ("wall_s", "_frames")},
        }
    result = {
        "benchmark": "dispatch",
        "claim": "parallel dispatch (one batched tool pass per round) vs sequential (one call per turn), same calls",
        "baseline": "sequential",
        "speedup_parallel_vs_sequential": summary["sequential"]["wall_s_median"]
        / summary["parallel"]["wall_s_median"],
        "same_windows_and_frames": same,
        "modes": summary,
        "setup": {
            "episodes": args.episodes,
            "calls_per_episode": args.calls,
            "video_minutes": args.minutes,
            "video": "ffmpeg testsrc2 320x180 @30 x264 (generated)",
            "overview_frames": args.frames,
            "workers": args.workers,
            "repeats": args.repeats,
            "seed": args.seed,
            "backend": "ScriptedBackend (token space, tiny qwen3-vl processor): no model compute",
        },
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cpus": os.cpu_count(),
        },
        "command": " ".join(
            [Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]
        ),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(
        json.dumps(
            {k: result[k] for k in ("speedup_parallel_vs_sequential", "same_windows_and_frames")}
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
