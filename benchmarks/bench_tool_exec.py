"""Tool execution and overview sampling: the reference path vs paravt, same process, same video.

Reference (docs/PREPROCESSING.md §7): per crop_video call an ``ffprobe`` subprocess for the
duration, then ``qwen_vl_utils.fetch_video`` (torchcodec backend, decoder opened per call, exact
seek mode, index-based frames, resize to the training pixel budget). Overview:
``fetch_video(nframes=64)``.

Ours: one ``execute_windows`` batch (each video opened once, frames de-duplicated across calls,
sorted, GOP-aligned lanes on ``--workers`` decoders, disposable H.264 pictures left out of the
decode; ``_no_skip`` decodes them too); overview: ``VideoSource.overview`` in
``exact`` and ``keyframe`` modes. Ours is timed twice: decode only (uint8 frames at source size)
and decode + the same torchvision resize the reference applies (run on the same ``--workers``
threads), so both produce the same kind of output; the headline ratio uses the second.

Cases: five windows of 10-30 s; a training-shaped batch (8 generations x 3 calls drawn from 6
distinct windows); 64-frame overviews. Runs are interleaved (reference, then ours at each worker
count) so machine load affects both alike; medians after warm-up. The long video is generated
with ffmpeg at benchmark time (testsrc2, x264 default keyframe interval) and cached.

    python benchmarks/bench_tool_exec.py --minutes 10 --workers 1,2,4
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
import time
from collections.abc import Callable
from pathlib import Path

import torch

RESULTS = Path(__file__).resolve().parent / "results"
MIN_PIXELS, MAX_PIXELS = 784, 50176  # training pixel budget (docs/PROTOCOL.md §3)


# -- the long video -------------------------------------------------------------------------
def ensure_video(cache: Path, minutes: float, size: str, fps: int) -> tuple[Path, list[str], float]:
    cache.mkdir(parents=True, exist_ok=True)
    seconds = int(round(minutes * 60))
    out = cache / f"testsrc2_{seconds}s_{size}_{fps}fps_x264.mp4"
    cmd = [
        shutil.which("ffmpeg") or "ffmpeg", "-y", "-loglevel", "error", "-f", "lavfi",
        "-i", f"testsrc2=size={size}:rate={fps}", "-t", str(seconds),
        "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-threads", "2",
    ]
    if out.is_file():
        return out, cmd + [str(out)], 0.0
    tmp = out.with_suffix(".part.mp4")
    t0 = time.perf_counter()
    print(f"generating {out} ({seconds} s {size} @ {fps}) ...", file=sys.stderr)
    subprocess.run(cmd + [str(tmp)], check=True)
    tmp.rename(out)
    return out, cmd + [str(out)], time.perf_counter() - t0


# -- the reference path ---------------------------------------------------------------------
def ffprobe_duration(path: Path) -> float:
    out = subprocess.run(
        ["ffprobe", "-v", "quiet", "-show_entries", "format=duration", "-of", "csv=p=0", str(path)],
        capture_output=True, text=True, timeout=10, check=True,
    )
    return float(out.stdout.strip())


def reference_call(path: Path, start: float, end: float) -> torch.Tensor:
    from qwen_vl_utils.vision_process import fetch_video

    duration = ffprobe_duration(path)
    if start >= duration:
        raise ValueError("start beyond duration")
    end = min(end, duration)
    return fetch_video({
        "video": f"file://{path}", "fps": 1, "min_frames": 1, "max_frames": 16,
        "min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS, "video_start": start, "video_end": end,
    })


def reference_overview(path: Path, k: int) -> torch.Tensor:
    from qwen_vl_utils.vision_process import fetch_video

    return fetch_video({"video": str(path), "nframes": k, "min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS})


# -- ours -----------------------------------------------------------------------------------
def resize_like_reference(frames: torch.Tensor) -> torch.Tensor:
    """The reference's resize (qwen-vl-utils smart_resize, factor 28, AA bicubic) to float."""
    from qwen_vl_utils.vision_process import smart_resize
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.functional import resize

    h, w = smart_resize(frames.shape[2], frames.shape[3], factor=28, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
    return resize(frames, [h, w], interpolation=InterpolationMode.BICUBIC, antialias=True).float()


def ours_windows(
    path: Path, windows: list[tuple[float, float]], workers: int, resize: bool, threads: int = 1, skip: bool = True
):
    from paravt.tools import CropConfig, WindowRequest, execute_windows

    reqs = [WindowRequest(str(path), {"start_time": s, "end_time": e}) for s, e in windows]
    batch = execute_windows(reqs, CropConfig(workers=workers, decoder_threads=threads, skip_disposable=skip))
    assert all(r.ok for r in batch.results), [r.error for r in batch.results if not r.ok]
    if resize:  # identical windows share a tensor: resize each distinct one once, on the same pool
        distinct = list({id(r.frames): r.frames for r in batch.results}.values())
        if workers > 1 and len(distinct) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=workers) as ex:  # torch releases the GIL
                list(ex.map(resize_like_reference, distinct))
        else:
            for frames in distinct:
                resize_like_reference(frames)
    return batch.stats


def ours_overview(path: Path, k: int, mode: str, workers: int, resize: bool, threads: int = 1, skip: bool = True):
    from paravt.video import VideoSource

    src = VideoSource(path, num_threads=threads, skip_disposable=skip)
    frames = src.overview(k, mode, workers=workers)
    if resize and workers > 1:  # the frames in ``workers`` chunks on as many threads, as for windows
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=workers) as ex:
            list(ex.map(resize_like_reference, frames.data.chunk(workers)))
    elif resize:
        resize_like_reference(frames.data)
    return len(frames)


# -- does torchcodec release the GIL? ---------------------------------------------------------
def gil_probe(path: Path, seconds_of_video: float = 20.0) -> dict:
    """Count pure-Python loop iterations per second alone and while another thread decodes.

    If the decode held the GIL, the counting thread would stall (rate near 0) for the whole
    decode; a rate comparable to the idle one means threads decode in parallel with Python.
    """
    import threading

    from paravt.video import VideoSource

    src = VideoSource(path)
    idx = [src.index_at(t) for t in range(int(seconds_of_video))]

    def spin(stop: Callable[[], bool]) -> tuple[int, float]:
        n, t0 = 0, time.perf_counter()
        while not stop():
            n += 1
        return n, time.perf_counter() - t0

    t_end = time.perf_counter() + 1.0
    n_idle, s_idle = spin(lambda: time.perf_counter() >= t_end)
    worker = threading.Thread(target=lambda: src._decode_indices(idx))
    worker.start()
    n_busy, s_busy = spin(lambda: not worker.is_alive())
    worker.join()
    idle, busy = n_idle / s_idle, n_busy / max(s_busy, 1e-9)
    return {
        "python_loop_rate_idle_per_s": round(idle),
        "python_loop_rate_during_decode_per_s": round(busy),
        "decode_s": round(s_busy, 3),
        "ratio": round(busy / idle, 3),
        "conclusion": "GIL released during decode (threads decode in parallel)" if busy / idle > 0.1
        else "GIL held during decode: use processes",
    }


def lane_balance(path: Path, windows: list[tuple[float, float]], workers: list[int]) -> dict:
    """Decode work per lane (frames from each GOP's keyframe to its last needed frame), no decoding.

    ``total / max_lane`` is the speed-up the pool can reach with that many free cores; on a
    shared machine the measured wall ratio falls short of it by however much CPU was taken.
    """
    from paravt.tools.batch import window_plan
    from paravt.tools.results import CropConfig
    from paravt.video import VideoSource
    from paravt.video.lanes import gop_groups, plan_lanes

    src = VideoSource(path)
    needed = sorted({i for s, e in windows for _, i in window_plan(src, s, e, CropConfig())})
    per_call = sum(
        sum(c for c, _ in gop_groups(src.table, sorted({i for _, i in window_plan(src, s, e, CropConfig())})))
        for s, e in windows
    )
    out = {"gop_frames_if_each_call_decoded_alone": per_call}
    for w in workers:
        lanes = plan_lanes({src.path: needed}, {src.path: src.table}, w)
        costs = [lane.cost for lane in lanes]
        out[f"workers{w}"] = {
            "lanes": len(costs), "gop_frames_total": sum(costs), "max_lane": max(costs),
            "ideal_speedup_on_free_cores": round(sum(costs) / max(costs), 2),
        }
    return out


# -- timing ---------------------------------------------------------------------------------
def cpu_seconds() -> float:
    """CPU time of this process (all threads) plus finished children (the ffprobe calls)."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one call."""
    c0, t0 = cpu_seconds(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, cpu_seconds() - c0


def run_case(name: str, reference: Callable[[], object], ours: dict[str, Callable[[], object]], repeats: int) -> dict:
    """Interleave reference and ours; medians of wall and CPU time, ratios reference / ours.

    CPU time is the work done (decode, scans, subprocesses); wall time also reflects how much of
    the machine each path got, which on a shared machine depends on its thread count.
    """
    wall: dict[str, list[float]] = {"reference": [], **{k: [] for k in ours}}
    cpu: dict[str, list[float]] = {"reference": [], **{k: [] for k in ours}}
    for rep in range(repeats):
        for key, fn in [("reference", reference), *ours.items()]:
            w, c = timed(fn)
            wall[key].append(w)
            cpu[key].append(c)
        print(f"  {name} rep {rep + 1}/{repeats}: " + ", ".join(
            f"{k}={wall[k][-1]:.2f}s wall/{cpu[k][-1]:.2f}s cpu" for k in wall), file=sys.stderr, flush=True)
    mw = {k: statistics.median(v) for k, v in wall.items()}
    mc = {k: statistics.median(v) for k, v in cpu.items()}
    return {
        "median_wall_s": {k: round(v, 3) for k, v in mw.items()},
        "median_cpu_s": {k: round(v, 3) for k, v in mc.items()},
        "ratio_reference_over_ours": {k: round(mw["reference"] / v, 2) for k, v in mw.items() if k != "reference"},
        "cpu_ratio_reference_over_ours": {k: round(mc["reference"] / v, 2) for k, v in mc.items() if k != "reference"},
        "samples_wall_s": {k: [round(x, 3) for x in v] for k, v in wall.items()},
        "samples_cpu_s": {k: [round(x, 3) for x in v] for k, v in cpu.items()},
    }


def pick_windows(rng: random.Random, duration: float, n: int) -> list[tuple[float, float]]:
    out = []
    for _ in range(n):
        length = rng.choice([10, 15, 20, 25, 30])
        start = round(rng.uniform(0, duration - length - 1), 1)
        out.append((start, start + length))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--video", type=Path, default=None, help="Use this video instead of generating one.")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--size", default="1280x720")
    ap.add_argument("--fps", type=int, default=30)
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/paravt-bench"))
    ap.add_argument("--workers", default="1,2,4", help="Comma-separated pool sizes to measure.")
    ap.add_argument("--decode-only-workers", type=int, default=2,
                    help="Pool size of the extra decode-only (no resize) measurement.")
    ap.add_argument("--warmup", type=int, default=1,
                    help="Untimed warm-up calls of each path before measuring (library load, page cache).")
    ap.add_argument("--ffmpeg-threads", type=int, default=4,
                    help="Extra variant: the decode-only pool size with this many FFmpeg threads per decoder.")
    ap.add_argument("--repeats", type=int, default=3, help="Measured runs of the quick cases.")
    ap.add_argument("--slow-repeats", type=int, default=2,
                    help="Measured runs of the slow cases (training_batch, overview_exact).")
    ap.add_argument("--overview-k", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cases", default="five_windows,training_batch,overview_exact,overview_keyframe,gil_probe,lane_balance")
    ap.add_argument("--out", type=Path, default=RESULTS / "bench_tool_exec.json")
    ap.add_argument("--merge", action="store_true",
                    help="Add this run's cases to an existing --out file instead of replacing it.")
    ap.add_argument("--tag", default="", help="Suffix for case names (with --merge), e.g. '@workers4'.")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)

    from paravt.video import VideoSource

    load_start = os.getloadavg()
    if args.video is not None:
        video, gen_cmd, gen_s = args.video.resolve(), None, 0.0
    else:
        video, gen_cmd, gen_s = ensure_video(args.cache_dir, args.minutes, args.size, args.fps)
    meta = VideoSource(video).meta
    rng = random.Random(args.seed)
    five = pick_windows(rng, meta.duration, 5)
    six = pick_windows(rng, meta.duration, 6)
    calls24 = [rng.choice(six) for _ in range(8 * 3)]
    workers = [int(w) for w in args.workers.split(",") if w.strip()]
    wanted = set(args.cases.split(","))

    cases: dict[str, dict] = {}
    def ours_set(make: Callable[..., Callable[[], object]]) -> dict[str, Callable[[], object]]:
        fns = {f"ours_workers{w}": make(w, True, 1) for w in workers}
        w = args.decode_only_workers
        fns[f"ours_workers{w}_decode_only"] = make(w, False, 1)
        fns[f"ours_workers{w}_no_skip"] = make(w, True, 1, False)
        if args.ffmpeg_threads > 1:
            fns[f"ours_workers{w}_ffmpeg_threads{args.ffmpeg_threads}"] = make(w, True, args.ffmpeg_threads)
        return fns

    # warm-up: one untimed call of each path (library loading, page cache), then all runs count
    print("warm-up", file=sys.stderr)
    for _ in range(args.warmup):
        reference_call(video, *five[0])
        ours_windows(video, [five[0]], 2, True)
        reference_overview(video, 8)
        ours_overview(video, 8, "exact", 1, True)

    if "five_windows" in wanted:
        print("case five_windows", file=sys.stderr)
        cases["five_windows"] = {
            "windows": five,
            **run_case("five_windows", lambda: [reference_call(video, s, e) for s, e in five],
                       ours_set(lambda w, r, t, s=True: (lambda: ours_windows(video, five, w, r, t, s))), args.repeats),
            "stats_workers2": ours_windows(video, five, 2, False).to_dict(),
            "target_ratio": 2.0,
        }
    if "training_batch" in wanted:
        print("case training_batch", file=sys.stderr)
        cases["training_batch"] = {
            "distinct_windows": six,
            "calls": calls24,
            **run_case("training_batch", lambda: [reference_call(video, s, e) for s, e in calls24],
                       ours_set(lambda w, r, t, s=True: (lambda: ours_windows(video, calls24, w, r, t, s))), args.slow_repeats),
            "stats_workers2": ours_windows(video, calls24, 2, False).to_dict(),
            "target_ratio": 6.0,
        }
    for mode in ("exact", "keyframe"):
        if f"overview_{mode}" not in wanted:
            continue
        print(f"case overview_{mode}", file=sys.stderr)
        cases[f"overview_{mode}"] = {
            "k": args.overview_k,
            **run_case(f"overview_{mode}", lambda: reference_overview(video, args.overview_k),
                       ours_set(lambda w, r, t, s=True, m=mode: (lambda: ours_overview(video, args.overview_k, m, w, r, t, s))),
                       args.slow_repeats if mode == "exact" else args.repeats),
            "target_ratio": 10.0 if mode == "keyframe" else None,
        }

    if "lane_balance" in wanted:
        cases["lane_balance"] = {
            "five_windows": lane_balance(video, five, workers),
            "training_batch": lane_balance(video, calls24, workers),
        }
    if "gil_probe" in wanted:
        print("case gil_probe", file=sys.stderr)
        cases["gil_probe"] = gil_probe(video)

    load_end = os.getloadavg()
    cpus = os.cpu_count() or 1
    for c in cases.values():
        c["load_avg_at_end_of_run"] = [round(x, 2) for x in load_end]
    shared = max(load_start[0], load_end[0]) > 0.5 * cpus
    import qwen_vl_utils  # noqa: F401
    import torchcodec

    result = {
        "benchmark": "tool_exec",
        "command": " ".join([Path(sys.argv[0]).name] + (argv if argv is not None else sys.argv[1:])),
        "video": {
            "path": str(video), "duration_s": meta.duration, "fps": meta.average_fps,
            "frames": meta.num_frames, "size": f"{meta.width}x{meta.height}", "codec": meta.codec,
            "keyframes": meta.num_keyframes, "generated_with": gen_cmd,
            "generation_s": round(gen_s, 1),
        },
        "reference": "per call: ffprobe subprocess + qwen_vl_utils.fetch_video (torchcodec backend, "
                     "TORCHCODEC_NUM_THREADS default 8, decoder opened per call, exact mode, resize "
                     "to min/max pixels 784/50176); overview: fetch_video(nframes=k)",
        "ours": "execute_windows (one open per video, frames de-duplicated across the batch, "
                "GOP-aligned lanes on N decoder threads, 1 FFmpeg thread each); VideoSource.overview. "
                "'ours_workersN' includes the same torchvision resize as the reference (each distinct "
                "window once, on the same N threads after decoding); '_decode_only' stops at uint8 frames; '_ffmpeg_threadsT' gives each "
                "decoder T FFmpeg threads (the reference uses 8); all of them leave disposable H.264 "
                "pictures out of the decode (paravt.video.disposable) except '_no_skip', which "
                "decodes every picture from the keyframe as before",
        "metrics": "wall = elapsed seconds; cpu = CPU seconds of this process's threads plus the "
                   "ffprobe children (the work done, independent of how much of a shared machine "
                   "each path got)",
        "warmup_calls_per_path": args.warmup,
        "repeats": {"quick_cases": args.repeats, "slow_cases": args.slow_repeats},
        "cases": cases,
        "machine": {
            "cpus": cpus, "platform": platform.platform(), "python": platform.python_version(),
            "torch": torch.__version__, "torchcodec": torchcodec.__version__,
            "load_avg_start": [round(x, 2) for x in load_start],
            "load_avg_end": [round(x, 2) for x in load_end],
            "shared": shared,
            "note": ("timings taken on a shared machine (other jobs were running; load average above "
                     "half the core count): absolute seconds are noisy, ratios come from interleaved "
                     "runs in one process") if shared else "machine was mostly idle",
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    if args.tag:
        cases = {f"{k}{args.tag}": v for k, v in cases.items()}
        result["cases"] = cases
    if args.merge and args.out.is_file():
        previous = json.loads(args.out.read_text())
        previous.setdefault("cases", {}).update(cases)
        previous.setdefault("merged_runs", []).append({
            "command": result["command"], "cases": sorted(cases), "machine": result["machine"],
        })
        result = previous
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    summary = {name: c.get("ratio_reference_over_ours", c) for name, c in cases.items()}
    print(json.dumps(summary, indent=2))
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
