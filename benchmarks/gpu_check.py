"""The checks of the on-device path (NVDEC, the one-pass kernel, the learner's peak) in one process,
one JSON: run by ``benchmarks/gpu_check.sh``.

Sections (each time-boxed by the overall deadline, each failure recorded, never fatal):

- ``kernel``: the one-pass Triton kernel on the 5 x 16 720p tool batch (and the 64-frame
  overview), parity with the torch reference in uint8 steps, float32 and bf16, and its time
  (CUDA events, median) against the copy floor (input read once + output written once at the
  device-to-device copy bandwidth measured in the same run);
- ``sync``: the engine's on-device preprocessing (``_Context.vision_inputs`` over CUDA frames)
  under ``torch.cuda.set_sync_debug_mode("warn")``: stream syncs counted (0 is the claim), and
  the host-to-device copies the profiler sees (the grid's pinned copy only);
- ``nvdec``: the test videos decoded with NVDEC (``paravt.video.nvdec.NvdecPool``) against CPU
  decoding: frames' shapes, largest difference, the CPU-fallback lines;
- ``learner``: Qwen3-VL-8B from the committed config (``tests/train/data/qwen3-vl-8b``, random
  bf16 weights), gradient checkpointing, TRL's fused LM head, one forward and backward of one
  row at the plan's longest context (text tokens: the vision tower is not run), its peak
  against ``--plan``'s lines for the same (weights + gradients + decoder activations + LM head).

Usage: python benchmarks/gpu_check.py OUT.json [--deadline-s 420] [--videos DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
CONFIG_8B = ROOT / "tests" / "train" / "data" / "qwen3-vl-8b"


def _events_ms(fn, repeats: int = 20) -> float:
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def kernel() -> dict:
    from paravt.kernels import pixel_values, reference_pixel_values
    from paravt.kernels.bench import copy_bandwidth, generated_frames
    from paravt.kernels.parity import step_diff

    dev = torch.device("cuda")
    bw = copy_bandwidth(dev)
    out: dict = {"copy_bandwidth_bytes_per_s": bw, "workloads": []}
    # channels-last 720p frames, as torchcodec decodes them
    tool = [generated_frames(16, 720, 1280, seed=i).contiguous(memory_format=torch.channels_last)
            for i in range(5)]  # fmt: skip
    overview = [
        generated_frames(64, 720, 1280, seed=9).contiguous(memory_format=torch.channels_last)
    ]
    for name, windows in (("tool batch 5x16 720p", tool), ("overview 64 720p", overview)):
        gpu = [w.to(dev) for w in windows]
        for layout in ("image", "video"):
            kw = {"arch": "qwen2.5-vl", "layout": layout}
            ref, _ = reference_pixel_values(windows, resize="float", **kw)
            row: dict = {"name": name, "layout": layout}
            for dtype in (torch.float32, torch.bfloat16):
                pv, _ = pixel_values(gpu, resize="float", out_dtype=dtype, **kw)
                row[str(dtype)[6:]] = step_diff(pv.float().cpu(), ref, kw["arch"]).as_dict()
            pv, _ = pixel_values(gpu, resize="float", **kw)
            ms = _events_ms(lambda: pixel_values(gpu, resize="float", **kw))  # noqa: B023
            moved = sum(w.numel() for w in gpu) + pv.numel() * pv.element_size()
            floor_ms = moved / bw * 1e3
            row.update(ms=ms, floor_ms=floor_ms, over_floor=ms / floor_ms)
            out["workloads"].append(row)
    return out


def sync(videos: Path | None) -> dict:
    from transformers import AutoProcessor

    from paravt.agent.chat import ChatCodec
    from paravt.agent.engine import _Context
    from paravt.kernels.bench import generated_frames
    from paravt.models.tiny import make_tiny_model
    from paravt.schema.episodes import ImageItem

    folder = Path(tempfile.gettempdir()) / "paravt-gpu-check-tiny"
    if not (folder / "config.json").is_file():
        make_tiny_model(folder)
    codec = ChatCodec(AutoProcessor.from_pretrained(str(folder)))
    frames = generated_frames(16, 720, 1280).cuda()
    items = []
    for i, f in enumerate(frames):
        it = ImageItem(f, float(i), "tool", 784, 50176)
        items.append(it)
    torch.cuda.synchronize()
    ctx = _Context(codec, pixel_dtype=torch.bfloat16, pixel_device="cuda")
    ctx.add_images(items)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                pv, grid, _ = ctx.vision_inputs()
                torch.cuda.synchronize()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    syncs = [str(w.message) for w in caught if "synchroniz" in str(w.message).lower()]
    h2d = [e for e in prof.events() if "HtoD" in e.name or "Memcpy HtoD" in e.name]
    return {
        "images": len(items),
        "pixel_values": list(pv.shape),
        "grid_rows": int(grid.shape[0]),
        # implicit syncs only: the explicit synchronize() that ends the timing is not flagged
        "sync_warnings": len(syncs),
        "sync_messages": syncs[:5],
        "h2d_copies": len(h2d),
    }


def nvdec(videos: Path | None) -> dict:
    from torchcodec.decoders import VideoDecoder

    from paravt.video.nvdec import NvdecPool

    if videos is None or not videos.is_dir():
        return {"skipped": "no test videos carried (.gpu_videos/)"}
    pool = NvdecPool("cuda")
    files = []
    for path in sorted(videos.glob("*"))[:12]:
        try:
            n = len(VideoDecoder(str(path), device="cpu"))
            idx = sorted({0, n // 2, n - 1})
            got = pool.decode(str(path), idx)
            want = VideoDecoder(str(path), device="cpu").get_frames_at(idx).data
            same = got.data.shape == want.shape
            diff = int((got.data.cpu().int() - want.int()).abs().max()) if same else None
            files.append({"file": path.name, "shape_equal": same, "max_diff": diff,
                          "equal": same and diff == 0, "fallback": got.fallback})  # fmt: skip
        except Exception as e:  # noqa: BLE001 - a file that fails is a result
            files.append({"file": path.name, "error": f"{type(e).__name__}: {e}"})
    return {"pool_size": pool.size, "files": files, "fallbacks": pool.fallbacks}


def learner() -> dict:
    from transformers import AutoConfig, AutoModelForImageTextToText
    from trl.trainer.utils import add_fused_lm_head

    from paravt.train.launch.plan import plan_for_command
    from paravt.train.run import load_command_config

    GB = 1e9
    sets = (f"model={CONFIG_8B}", "trainer.beta=0", "trainer.gradient_checkpointing=true")
    cfg = load_command_config("paragrpo", sets, check_trainer=False)
    # one process, no optimizer step: weights, gradients and one loss forward's lines
    plan = plan_for_command(cfg, world_size=1, strategy="ddp")
    ctx, shape = plan.context, plan.shape
    names = ("weights", "gradients", "loss: decoder activations", "loss: LM head (fused)")
    planned = {name: plan.item(name).bytes for name in names}
    want = sum(planned.values())
    config = AutoConfig.from_pretrained(str(CONFIG_8B))
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = AutoModelForImageTextToText.from_config(config)
    torch.set_default_dtype(torch.float32)
    model.train()
    model.gradient_checkpointing_enable()
    model.config.use_cache = False
    add_fused_lm_head(model, outputs=("log_probs",))
    L, Tc = ctx.context_tokens, ctx.completion_tokens
    ids = torch.randint(0, shape.vocab, (1, L), device="cuda")
    labels = ids.clone()
    labels[:, : L - Tc] = -100
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    out = model(input_ids=ids, attention_mask=torch.ones_like(ids), labels=labels,
                fused_lm_head=True)  # fmt: skip
    out.log_probs[labels != -100].sum().backward()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    return {
        "context_tokens": L,
        "completion_tokens": Tc,
        "weights_gb": base / GB,
        "peak_gb": peak / GB,
        "plan_gb": want / GB,
        "peak_over_plan": peak / want,
        "plan_lines_gb": {k: v / GB for k, v in planned.items()},
        "seconds": time.perf_counter() - t0,
        "vision_tower": "not run (text tokens only)",
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--deadline-s", type=float, default=420.0)
    ap.add_argument("--videos", type=Path, default=None)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("gpu_check.py: no CUDA device (torch.cuda.is_available() is False)", file=sys.stderr)
        return 3
    start = time.perf_counter()
    p = torch.cuda.get_device_properties(0)
    report: dict = {
        "device": p.name,
        "memory_gb": p.total_memory / 1e9,
        "torch": torch.__version__,
        "sections": {},
    }
    sections = (
        ("kernel", kernel),
        ("sync", lambda: sync(a.videos)),
        ("nvdec", lambda: nvdec(a.videos)),
        ("learner", learner),
    )
    status = 0
    for name, fn in sections:
        left = a.deadline_s - (time.perf_counter() - start)
        if left < 30:
            report["sections"][name] = {"skipped": f"deadline ({a.deadline_s:.0f} s) reached"}
            continue
        t0 = time.perf_counter()
        try:
            report["sections"][name] = fn()
        except Exception as e:  # noqa: BLE001 - every section's failure is recorded
            report["sections"][name] = {"error": f"{type(e).__name__}: {e}",
                                        "trace": traceback.format_exc()[-2000:]}  # fmt: skip
            status = 1
        report["sections"][name]["seconds"] = time.perf_counter() - t0
        torch.cuda.empty_cache()
        Path(a.out).write_text(json.dumps(report, indent=2, default=str))
    print(json.dumps(report, default=str)[:4000])
    return status


if __name__ == "__main__":
    sys.exit(main())
