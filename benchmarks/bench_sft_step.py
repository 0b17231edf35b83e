"""Seconds per ``paravt sft`` optimizer step of the toy-preset model on a realistic toy episode.

Why: the toy paradox experiment (experiments/toy_paradox: SFT cold start, then PARA-GRPO vs vanilla GRPO on 2 CPU cores) must
be sized before it is run; this measures the cost of one SFT step and the model's size.

Setup: a generated 120 s, 96×96, 4 fps H.264 video (a keyframe every 2 s), like the toy task's.
Each episode is played by the real engine with a scripted trajectory: K = 4 overview frames, one
turn of 5 parallel ``crop_video`` calls tiling the video (24 s windows → 16 frames each), then an
answer turn; every frame at 64×64 (pixel budget 4,096 → 4 vision tokens). The model is
``make_tiny_model(preset="toy")`` (Qwen3-VL, random init). Training is ``paravt sft`` itself
(TRL's SFTTrainer, fp32, no gradient checkpointing); a callback times each optimizer step, and the
median over the steps after the first is reported, for each batch size asked.

    OMP_NUM_THREADS=1 python benchmarks/bench_sft_step.py --batch-sizes 1 4 --steps 6

Output: ``benchmarks/results/bench_sft_step.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
DURATION = 120
WINDOWS = 5
PIXELS = 64 * 64


def make_video(folder: Path) -> Path:
    out = folder / "toy_like_120s_96x96_4fps.mp4"
    cmd = [
        shutil.which("ffmpeg") or "ffmpeg", "-y", "-loglevel", "error",
        "-f", "lavfi", "-i", f"testsrc2=size=96x96:rate=4:duration={DURATION}",
        "-c:v", "libx264", "-preset", "veryfast", "-g", "8", "-pix_fmt", "yuv420p", str(out),
    ]  # fmt: skip
    subprocess.run(cmd, check=True)
    return out


def script() -> list[str]:
    step = DURATION / WINDOWS
    calls = "\n".join(
        '<tool_call>\n{"name": "crop_video", "arguments": {"video_path": "video", '
        f'"start_time": {i * step:.0f}, "end_time": {(i + 1) * step:.0f}}}}}\n</tool_call>'
        for i in range(WINDOWS)
    )
    return [
        f"The square is not in the overview; I will check five windows that tile the video.</think>\n{calls}",
        "<think>The square in the third window is red.</think>\n<answer>A</answer>",
    ]


class StepTimer:
    """Wall time of each optimizer step (a ``TrainerCallback``)."""

    def __init__(self):
        from transformers import TrainerCallback

        timer = self

        class _Callback(TrainerCallback):
            def on_step_begin(self, args, state, control, **kwargs):
                timer.t0 = time.perf_counter()

            def on_step_end(self, args, state, control, **kwargs):
                timer.seconds.append(time.perf_counter() - timer.t0)

        self.t0 = 0.0
        self.seconds: list[float] = []
        self.callback = _Callback()


def run(work: Path, video: Path, batch: int, steps: int) -> dict:
    from paravt.train.sft.run import load_sft_config, run_sft

    rows = work / f"rows_b{batch}.jsonl"
    n = batch * 2
    rows.write_text(
        "".join(
            json.dumps(
                {"id": f"q{i}", "video": str(video), "question": "What colour was the square?",
                 "options": ["red", "blue", "green", "yellow"], "answer": "A",
                 "question_type": "mcq"}
            ) + "\n"
            for i in range(n)
        )
    )  # fmt: skip
    overrides = (
        f"output_dir={work / f'run_b{batch}'}",
        "model=tiny:qwen3-vl:toy",
        f"data.path={rows}",
        "engine.frames=4",
        f"engine.min_pixels={PIXELS}",
        f"engine.max_pixels={PIXELS}",
        "engine.crop.max_frames=16",
        f"engine.crop.min_pixels={PIXELS}",
        f"engine.crop.max_pixels={PIXELS}",
        "engine.max_new_tokens=512",
        f"trajectories.options.script={json.dumps(script())}",
        f"trainer.per_device_train_batch_size={batch}",
        f"trainer.max_steps={steps}",
        "trainer.save_strategy=no",
        "trainer.learning_rate=3e-4",
    )
    cfg = load_sft_config("sft-smoke", overrides)
    timer = StepTimer()
    t0 = time.perf_counter()
    summary = run_sft(cfg, on_trainer=lambda tr: tr.add_callback(timer.callback))
    total = time.perf_counter() - t0
    params = json.loads((work / f"run_b{batch}" / "toy-qwen3-vl" / "paravt_tiny.json").read_text())
    t = summary["trajectories"]
    steady = timer.seconds[1:] or timer.seconds
    return {
        "batch_size": batch,
        "steps": len(timer.seconds),
        "seconds_per_step_median": round(statistics.median(steady), 3),
        "seconds_per_step_all": [round(s, 3) for s in timer.seconds],
        "seconds_per_episode": round(statistics.median(steady) / batch, 3),
        "episode_tokens": t["tokens"] // max(1, t["kept"]),
        "episode_generated_tokens": t["generated_tokens"] // max(1, t["kept"]),
        "episode_images": t["images"] // max(1, t["kept"]),
        "parameters": params["parameters"],
        "run_seconds_total": round(total, 1),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--out", default=str(RESULTS / "bench_sft_step.json"))
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        video = make_video(work)
        results = [run(work, video, b, a.steps) for b in a.batch_sizes]
    out = {
        "benchmark": "bench_sft_step",
        "command": "OMP_NUM_THREADS=1 python benchmarks/bench_sft_step.py "
        + " ".join(["--batch-sizes", *map(str, a.batch_sizes), "--steps", str(a.steps)]),
        "setup": {
            "video": f"testsrc2 {DURATION}s 96x96 4fps x264 gop 8",
            "episode": f"K=4 overview + {WINDOWS} parallel windows of up to 16 frames, "
            f"all frames {PIXELS} px (64x64)",
            "model": "make_tiny_model(preset='toy'), Qwen3-VL, fp32",
        },
        "results": results,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "load_avg_1m": os.getloadavg()[0],
        },
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
