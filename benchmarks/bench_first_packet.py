"""What seeing the first packet costs, and what the straight-decode fault path costs.

Two numbers behind docs/PREPROCESSING.md ("Every decoder has seen the file's first packet",
"FFmpeg's error lines are read"), on a long real-footage video (default: the x264 ``veryfast``
row that ``bench_tool_exec.py`` builds and caches; ``--video`` for another):

* ``prime``: building a decoder from the frame table as torchcodec does and through
  ``VideoSource.decoders.new()`` (the same, then the first frame decoded: ``opening.prime``),
  median over ``--decoders`` builds; the difference is what every decoder pays.
* ``straight``: one frame at each of ``--at`` seconds decoded from its restart point (a fresh
  source, the normal path) and straight from the file's start (``decoders.settle``, the fault
  path taken only where FFmpeg logged an error), wall and CPU seconds.

The machine's load average is recorded before and after: on a shared machine the wall times
move with it, CPU seconds less so.

    python benchmarks/bench_first_packet.py                 # after bench_tool_exec.py has run
    python benchmarks/bench_first_packet.py --video clip.mp4 --at 10,60
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
CACHE = Path("/tmp/paravt-bench")


def _default_video() -> Path:
    found = sorted(CACHE.glob("x264_veryfast_600s_*.mp4"))
    if not found:
        raise SystemExit(
            f"no cached video in {CACHE}: run benchmarks/bench_tool_exec.py first, or pass --video"
        )
    return found[-1]


def _timed(fn):
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def measure_prime(src, builds: int) -> dict:
    """A decoder from the frame table as torchcodec builds it (unprimed) against the seam's
    ``decoders.new()`` (the same build, then the first frame decoded)."""
    from torchcodec.decoders import VideoDecoder

    mappings = src.table.frame_mappings()

    def unprimed():
        return VideoDecoder(src.path, num_ffmpeg_threads=1, custom_frame_mappings=mappings)

    rows: dict[str, list[float]] = {"unprimed": [], "primed": []}
    for _ in range(2):  # interleaved, so load affects both alike
        for name, build in (("unprimed", unprimed), ("primed", src.decoders.new)):
            for _ in range(builds // 2):
                rows[name].append(_timed(build)[1])
    med = {k: statistics.median(v) for k, v in rows.items()}
    return {
        "builds_each": len(rows["primed"]),
        "median_build_s": med,
        "prime_cost_s": med["primed"] - med["unprimed"],
    }


def measure_straight(path: str, at: list[float]) -> list[dict]:
    """One frame from its restart point (the normal decode) and through the fault path
    (``decoders.settle`` on an outcome that says FFmpeg logged an error: a straight decode)."""
    from paravt.video import VideoSource
    from paravt.video.decode import DecodeOutcome

    rows = []
    for t in at:
        src = VideoSource(path, skip_disposable=False)
        i = src.index_at(t)
        _, wall_r, cpu_r = _timed(lambda s=src, i=i: s.decoders.decode([i], try_skipping=False))
        logged = DecodeOutcome(logged={i: "benchmark: as if FFmpeg had logged an error"})
        out, wall_s, cpu_s = _timed(lambda s=src, o=logged: s.decoders.settle(o))
        assert i in out.frames, f"the straight decode returned no frame at {t} s"
        rows.append({
            "at_s": t, "frame": i,
            "restart_point": {"wall_s": round(wall_r, 3), "cpu_s": round(cpu_r, 3)},
            "straight_from_start": {"wall_s": round(wall_s, 3), "cpu_s": round(cpu_s, 3)},
        })  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--video", type=Path, default=None)
    ap.add_argument("--decoders", type=int, default=12, help="Decoder builds per variant.")
    ap.add_argument("--at", default="30,120", help="Seconds of the frames decoded straight.")
    ap.add_argument("--out", type=Path, default=RESULTS / "bench_first_packet.json")
    args = ap.parse_args(argv)
    import torch

    from paravt.video import VideoSource

    torch.set_num_threads(1)
    path = str(args.video or _default_video())
    load_start = os.getloadavg()
    src = VideoSource(path)
    result = {
        "benchmark": "bench_first_packet.py",
        "video": {
            "name": Path(path).name,
            "codec": src.meta.codec,
            "size": f"{src.meta.width}x{src.meta.height}",
            "duration_s": round(src.meta.duration, 2),
            "frames": src.meta.num_frames,
            "restart_points": src.meta.num_keyframes,
        },  # fmt: skip
        "prime": measure_prime(src, args.decoders),
        "straight": measure_straight(path, [float(x) for x in args.at.split(",")]),
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_start": [round(x, 2) for x in load_start],
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        },  # fmt: skip
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
