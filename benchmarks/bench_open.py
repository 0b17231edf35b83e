"""What opening a video costs, and how much of it the restart-point scan adds.

Claim (docs/PREPROCESSING.md §1, "Frames equal the file"): ``VideoSource`` reads every packet of
an H.264 or HEVC file once with PyAV, to tell restart points from other keyframe flags and to
find damaged packets (``paravt.video.bitstream.scan_bitstream``). This measures that pass beside
the baseline every open already pays, torchcodec's own packet scan (``Demuxer.scan``), and the
whole ``VideoSource`` open, in one process, on each file given (default: the long videos
``bench_tool_exec.py`` builds in ``--cache-dir``). Medians of ``--repeats`` runs after one
warm-up (the file is then in the page cache: the numbers are CPU work, not disk reads).

    python benchmarks/bench_open.py [FILE ...] [--out benchmarks/results/bench_open.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def timed(fn, repeats: int) -> dict:
    """Median wall and CPU seconds of ``fn()`` over ``repeats`` runs, after one warm-up run."""
    fn()
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return {
        "wall_s": round(statistics.median(walls), 4),
        "cpu_s": round(statistics.median(cpus), 4),
    }


def measure(path: Path, repeats: int) -> dict:
    from torchcodec.decoders._blocks import Demuxer

    from paravt.video import VideoSource
    from paravt.video.bitstream import scan_bitstream

    src = VideoSource(path)
    meta, table = src.meta, src.table
    key_times = [table.pts[i] for i in table.keyframes + table.demoted]
    rows = {
        "torchcodec_scan": timed(
            lambda: Demuxer(str(path), streams="video").streams[0].scan(), repeats
        ),
        "bitstream_scan": timed(lambda: scan_bitstream(str(path), meta.codec, key_times), repeats),
        "videosource_open": timed(lambda: VideoSource(path).close(), repeats),
    }
    base = rows["torchcodec_scan"]["cpu_s"]
    return {
        "codec": meta.codec,
        "frames": meta.num_frames,
        "seconds": round(meta.duration, 2),
        "size": [meta.width, meta.height],
        "restart_points": meta.num_keyframes,
        "demoted_keyframes": meta.demoted_keyframes,
        "damaged_packets": len(table.damaged),
        **rows,
        "bitstream_over_torchcodec_cpu": round(rows["bitstream_scan"]["cpu_s"] / base, 2)
        if base
        else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/paravt-bench"))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=RESULTS / "bench_open.json")
    args = ap.parse_args(argv)
    files = args.files or sorted(args.cache_dir.glob("*_[0-9]*s_unit*.mp4"))
    if not files:
        print(
            f"no files given and none in {args.cache_dir} (run bench_tool_exec.py first)",
            file=sys.stderr,
        )
        return 2
    out = {
        "benchmark": "bench_open",
        # file names only: a results file holds no path of the machine it ran on
        "command": " ".join(
            ["bench_open.py", *(Path(a).name if "/" in a else a for a in (argv or sys.argv[1:]))]
        ),
        "baseline": "torchcodec_scan: the packet scan every open already pays",
        "repeats": args.repeats,
        "machine": {
            "python": platform.python_version(),
            "cpu": platform.processor() or platform.machine(),
        },
        "files": {f.name: measure(f, args.repeats) for f in files},
    }
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["files"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
