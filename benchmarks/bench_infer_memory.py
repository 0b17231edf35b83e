"""Peak memory and time of ``paravt infer`` at the evaluation budget: N questions about one video.

Runs ``paravt infer VIDEO -q - --json`` (the tiny random Qwen3-VL model, CPU) under
``/usr/bin/time -v`` with ``--questions`` questions about one long 720p video, once per batch
size, and records the peak resident memory, the wall time and the episodes' own preprocess and
generate seconds. ``--paravt`` picks the command to measure, so the same script measures another
checkout (e.g. ``main`` installed in its own venv) for a before/after pair.

The video is the ``x264_veryfast`` row of ``bench_tool_exec.py`` (real footage, looped), built
the same way and cached. At K = 64 and the default overview budget (100,352-602,112 px) a 720p
frame is 576 merged tokens (2,304 rows of 1,536 floats), so an episode's overview is ~0.9 GB of
float32 ``pixel_values`` (docs/INFER.md, "Memory").

    python benchmarks/bench_infer_memory.py                        # K=64, 8 questions, batch 1 and 8
    python benchmarks/bench_infer_memory.py --frames 16 --minutes 2 --out /tmp/x.json   # smoke
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from bench_tool_exec import RESULTS, ensure_video

QUESTION = {"question": "What happens in the video?", "options": ["A pan", "A rabbit", "A car"]}


def tiny_model(folder: Path) -> Path:
    from paravt.models.tiny import make_tiny_model

    if not (folder / "config.json").is_file():
        make_tiny_model(folder, arch="qwen3-vl")
    return folder


def measure(paravt: str, video: Path, model: Path, questions: int, batch: int, frames: int,
            extra: list[str]) -> dict:  # fmt: skip
    lines = "".join(
        json.dumps({**QUESTION, "id": f"q{i}", "question": f"{QUESTION['question']} ({i})"}) + "\n"
        for i in range(questions)
    )
    cmd = ["/usr/bin/time", "-v", paravt, "infer", str(video), "-q", "-", "--model", str(model),
           "--batch-size", str(batch), "--frames", str(frames), "--json", *extra]  # fmt: skip
    t0 = time.perf_counter()
    done = subprocess.run(cmd, input=lines, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    out: dict = {
        "batch_size": batch, "exit_code": done.returncode, "wall_s": round(wall, 1),
        "peak_rss_gb": round(int(peak.group(1)) / 2**20, 2) if peak else None,
    }  # fmt: skip
    if done.returncode != 0:
        out["stderr_tail"] = done.stderr.strip()[-800:]
        return out
    records = [json.loads(line)["record"] for line in done.stdout.splitlines() if line.strip()]
    timings = [r.get("timings", {}) for r in records]
    out.update(
        {
            "episodes": len(records),
            "status": sorted({r.get("status") for r in records}),
            "image_tokens_per_episode": sorted({r.get("tokens", {}).get("image") for r in records}),
            "preprocess_s_per_episode": [round(t.get("preprocess_s", 0.0), 2) for t in timings],
            "generate_s_per_episode": [round(t.get("generate_s", 0.0), 2) for t in timings],
        }
    )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--paravt",
        default=str(Path(sys.executable).parent / "paravt"),
        help="The paravt command to measure (default: this venv's).",
    )
    ap.add_argument("--label", default="this checkout")
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--frames", type=int, default=64, help="Overview budget K.")
    ap.add_argument("--questions", type=int, default=8)
    ap.add_argument("--batch-sizes", default="1,8")
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/paravt-bench"))
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Passed to paravt infer (e.g. engine.max_new_tokens=64).",
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "bench_infer_memory.json")
    ap.add_argument("--merge", action="store_true", help="Add this run to an existing --out.")
    args = ap.parse_args(argv)

    video, made = ensure_video(args.cache_dir, "x264_veryfast", args.minutes)
    model = tiny_model(args.cache_dir / "tiny_qwen3_vl")
    extra = [x for kv in args.set for x in ("--set", kv)]
    runs = []
    for b in (int(x) for x in args.batch_sizes.split(",")):
        print(f"{args.label}: batch {b} ...", file=sys.stderr, flush=True)
        runs.append(measure(args.paravt, video, model, args.questions, b, args.frames, extra))
        print(json.dumps(runs[-1]), file=sys.stderr)
    entry = {
        "label": args.label, "paravt": args.paravt, "frames": args.frames,
        "questions": args.questions, "video": {"path": str(video), **made},
        "settings": args.set, "runs": runs,
        "command": " ".join([Path(sys.argv[0]).name] + (argv if argv is not None else sys.argv[1:])),
    }  # fmt: skip
    result = {"benchmark": "infer_memory", "measurements": [entry]}
    if args.merge and args.out.is_file():
        result = json.loads(args.out.read_text())
        result["measurements"].append(entry)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
