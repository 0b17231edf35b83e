"""Where the time of the CUDA ``pixel_values`` call goes: host work vs GPU kernels.

Run on a CUDA machine (``benchmarks/gpu_profile.sh`` wraps it for a lent GPU). For the two
``bench-kernels`` workloads — a tool batch (5 windows x 16 frames) and a 64-frame overview, 720p
channels-last uint8 frames -> Qwen2.5-VL ``pixel_values`` (168x280) — in both layouts, it records
per variant of the kernel module:

* wall ms per call (synchronised before and after, as ``bench-kernels`` times it), the host-side
  ms (the call returning, without waiting for the GPU), and ms per call when calls are queued
  back to back (what a pipeline sees);
* a ``torch.profiler`` trace (CPU + CUDA activities) of a few calls after warm-up: every GPU
  kernel/memcpy with count and GPU time, the runtime/driver calls (kernel launches,
  cudaStreamSynchronize, memcpy, host/device allocations) with counts, the per-call GPU busy time
  and the span from first kernel start to last kernel end;
* the same kernels replayed from a CUDA graph (kernels only, no host work): the GPU floor;
* achieved bytes/s as a fraction of a device-to-device copy measured in the same run, with the
  ``bench-kernels`` byte count (uint8 frames read once + ``pixel_values`` written once).

Variants: ``new`` is the working tree's ``paravt.kernels``; ``old`` (optional, ``--old DIR``) is a
copy of an earlier ``api.py`` + ``triton_resize.py`` loaded beside it, so both are measured in one
process on the same frames, and their outputs are compared bit for bit. A small tile-size sweep of
the new kernels and an NCHW-contiguous input run give leads for the next change.

Frames are random uint8 (the kernels' memory access does not depend on pixel values).
Writes ``profile_pixel_values.json`` (and a ``.log`` of profiler tables) into ``--out``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import statistics
import sys
import time
import traceback
from collections import defaultdict
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def _import_paravt_kernels():
    """``paravt.kernels`` from an install, else straight from the checkout (src/ + kernels/)."""
    try:
        import paravt.kernels  # noqa: F401
    except ImportError:
        sys.path.insert(0, str(ROOT / "src"))
        for name in [m for m in sys.modules if m == "paravt" or m.startswith("paravt.")]:
            del sys.modules[name]
        import paravt

        paravt.__path__.append(str(ROOT))  # kernels/ -> paravt.kernels, as setup.py maps it
        import paravt.kernels  # noqa: F401


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _variants(old_dir: str | None) -> dict:
    from paravt.kernels import api, triton_resize

    out = {"new": {"pixel_values": api.pixel_values, "tr": triton_resize}}
    if old_dir:
        d = ROOT / old_dir
        old_tr = _load("paravt_old_triton_resize", d / "triton_resize.py")
        old_api = _load("paravt_old_api", d / "api.py")
        old_api._triton = lambda: old_tr
        out["old"] = {"pixel_values": old_api.pixel_values, "tr": old_tr}
    return out


_ABS = re.compile(r"(?<![\w.])/(?:work|root|home/\w+|tmp|opt|usr)/[^\s\"']*")


def _relative(text: str) -> str:
    """Recorded text without this machine's absolute paths (the repo root becomes '.')."""
    return _ABS.sub("<abs-path>", text.replace(str(ROOT), "."))


def _sync():
    torch.cuda.synchronize()


def _timed(fn, reps: int, wait: bool) -> dict:
    """Min and median ms of ``fn`` over ``reps`` calls, the GPU idle at each start; with
    ``wait`` until its work is done (wall time), else until the call returns (host time)."""
    samples = []
    for _ in range(reps):
        _sync()
        t0 = time.perf_counter()
        fn()
        if wait:
            _sync()
        samples.append((time.perf_counter() - t0) * 1e3)
    _sync()
    return {"min": round(min(samples), 4), "median": round(statistics.median(samples), 4)}


def _wall(fn, reps: int) -> dict:
    return _timed(fn, reps, wait=True)


def _host(fn, reps: int) -> dict:
    return _timed(fn, reps, wait=False)


def _pipelined(fn, calls: int, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        _sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        _sync()
        best = min(best, (time.perf_counter() - t0) * 1e3 / calls)
    return round(best, 4)


def _is_device_event(e) -> bool:
    return "CUDA" in str(getattr(e, "device_type", "")) or "cuda" in str(
        getattr(e, "device_type", "")
    )


def _profile(fn, calls: int, log) -> dict:
    """torch.profiler over ``calls`` synchronised calls: kernels, API calls, per-call GPU time."""
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            with record_function("pixel_values_call"):
                fn()
            _sync()
    events = list(prof.events())
    kernels: dict = defaultdict(lambda: {"count": 0, "gpu_us": 0.0})
    api: dict = defaultdict(int)
    dev_intervals = []
    call_cpu_us = []
    for e in events:
        name = e.name
        if name == "pixel_values_call":  # the range itself (also mirrored on the GPU timeline)
            if not _is_device_event(e):
                call_cpu_us.append(e.time_range.elapsed_us())
        elif _is_device_event(e):
            dur = e.time_range.elapsed_us()
            kernels[name]["count"] += 1
            kernels[name]["gpu_us"] += dur
            dev_intervals.append((e.time_range.start, e.time_range.end))
        elif name.startswith(("cuda", "cu")) and not name.startswith("cudnn"):
            api[name] += 1
    dev_intervals.sort()
    per_call = max(1, len(dev_intervals) // calls) if dev_intervals else 0
    spans = []
    if per_call and len(dev_intervals) == per_call * calls:
        for i in range(calls):
            chunk = dev_intervals[i * per_call : (i + 1) * per_call]
            spans.append(chunk[-1][1] - chunk[0][0])
    busy_us = sum(v["gpu_us"] for v in kernels.values())
    launches = sum(v for k, v in api.items() if "LaunchKernel" in k)
    res = {
        "calls": calls,
        "kernels": {
            k: {
                "count_per_call": v["count"] / calls,
                "gpu_us_per_call": round(v["gpu_us"] / calls, 2),
                "gpu_us_each": round(v["gpu_us"] / max(v["count"], 1), 2),
            }
            for k, v in sorted(kernels.items(), key=lambda kv: -kv[1]["gpu_us"])
        },
        "gpu_busy_us_per_call": round(busy_us / calls, 2),
        "gpu_span_us_per_call_median": round(statistics.median(spans), 2) if spans else None,
        "cpu_us_per_call_median_under_profiler": (
            round(statistics.median(call_cpu_us), 2) if call_cpu_us else None
        ),
        "api_calls_per_call": {k: v / calls for k, v in sorted(api.items())},
        "kernel_launches_per_call": launches / calls,
        "stream_syncs_per_call": sum(v for k, v in api.items() if "StreamSynchronize" in k) / calls,
        "device_syncs_per_call_incl_timing": sum(
            v for k, v in api.items() if "DeviceSynchronize" in k or "CtxSynchronize" in k
        )
        / calls,
        "memcpy_calls_per_call": sum(v for k, v in api.items() if "emcpy" in k) / calls,
    }
    try:
        table = prof.key_averages().table(sort_by="device_time_total", row_limit=30)
    except (KeyError, AttributeError, ValueError):  # older torch names it cuda_time_total
        table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=30)
    log.write(_relative(table) + "\n")
    return res


def _graph(tr, windows, sizes, spec, layout, rows, reps: int) -> dict:
    """Kernels only (``pack_windows`` into a preallocated output) captured once and replayed."""
    out = torch.empty((rows, spec.patch_dim), dtype=torch.float32, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            tr.pack_windows(windows, sizes, spec, layout, out)
    torch.cuda.current_stream().wait_stream(s)
    eager = out.clone()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        tr.pack_windows(windows, sizes, spec, layout, out)
    out.zero_()
    g.replay()
    _sync()
    same = bool(torch.equal(out, eager))
    res = {"replay_ms": _wall(g.replay, reps), "replay_pipelined_ms": _pipelined(g.replay, reps)}
    # eager kernels-only (no validation / grid_thw / allocation of out): host cost of launches
    res["eager_pack_windows_ms"] = _wall(
        lambda: tr.pack_windows(windows, sizes, spec, layout, out), reps
    )
    res["eager_pack_windows_host_ms"] = _host(
        lambda: tr.pack_windows(windows, sizes, spec, layout, out), reps
    )
    res["graph_output_equals_eager"] = same
    return res


def _events_ms(fn, reps: int) -> float:
    """Median GPU ms of ``fn`` by CUDA events (kernels-only sweeps)."""
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _sync()
        a.record()
        fn()
        b.record()
        _sync()
        times.append(a.elapsed_time(b))
    return round(statistics.median(times), 4)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="benchmarks/results/gpu")
    ap.add_argument(
        "--old", default=None, help="folder (repo-relative) with old api.py + triton_resize.py"
    )
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--profile-calls", type=int, default=5)
    ap.add_argument("--no-sweep", action="store_true")
    args = ap.parse_args()
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / "profile_pixel_values.json"
    with open(out_dir / "profile_pixel_values.log", "w") as log:
        return _run(args, json_path, log)


def _run(args, json_path: Path, log) -> int:
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    _import_paravt_kernels()
    import triton

    from paravt.kernels.bench import copy_bandwidth
    from paravt.kernels.pack import rows_for
    from paravt.kernels.spec import arch_spec, smart_resize
    from paravt.video.config import WINDOW_MAX_PIXELS, WINDOW_MIN_PIXELS

    dev = torch.device("cuda")
    arch = "qwen2.5-vl"
    spec = arch_spec(arch)
    report: dict = {
        "device_name": torch.cuda.get_device_name(0),
        "versions": {"torch": torch.__version__, "triton": triton.__version__},
        "arch": arch,
        "frames": "random uint8 720x1280, channels_last (as torchcodec decodes)",
        "old_variant": args.old,
        "reps": args.reps,
        "profile_calls": args.profile_calls,
        "workloads": {},
        "errors": [],
    }

    def dump():
        json_path.write_text(_relative(json.dumps(report, indent=1)))

    variants = _variants(args.old)
    g = torch.Generator(device=dev).manual_seed(0)
    frames = torch.randint(0, 256, (80, 3, 720, 1280), dtype=torch.uint8, device=dev, generator=g)
    frames = frames.contiguous(memory_format=torch.channels_last)
    copy_bw = copy_bandwidth(dev)
    report["copy_bandwidth_bytes_per_s"] = copy_bw
    tool = [frames[i * 16 : (i + 1) * 16] for i in range(5)]
    overview = [frames[:64]]
    kw = {"arch": arch, "min_pixels": WINDOW_MIN_PIXELS, "max_pixels": WINDOW_MAX_PIXELS}

    def frac(moved: int, ms: float | None):
        if not ms:
            return None
        return round(moved / (ms / 1e3) / copy_bw, 5)

    for wname, windows in (("tool_batch_5x16", tool), ("overview_64", overview)):
        for layout in ("image", "video"):
            key = f"{wname}_{layout}"
            sizes = [
                smart_resize(
                    w.shape[2],
                    w.shape[3],
                    spec.factor,
                    **{k: kw[k] for k in ("min_pixels", "max_pixels")},
                )
                for w in windows
            ]
            rows = sum(
                rows_for(w.shape[0], h, ww, spec, layout)
                for w, (h, ww) in zip(windows, sizes, strict=True)
            )
            moved = sum(w.numel() for w in windows) + rows * spec.patch_dim * 4
            row: dict = {
                "windows": len(windows),
                "frames": sum(w.shape[0] for w in windows),
                "resized": list(sizes[0]),
                "pixel_values_shape": [rows, spec.patch_dim],
                "min_bytes_moved": moved,
                "floor_us_at_copy_bandwidth": round(moved / copy_bw * 1e6, 2),
                "variants": {},
            }
            report["workloads"][key] = row
            outs = {}
            for vname, v in variants.items():
                fn = lambda pv=v["pixel_values"], ws=windows, lo=layout: pv(  # noqa: E731
                    ws, layout=lo, resize="float", **kw
                )
                r: dict = {}
                try:
                    for _ in range(3):
                        res = fn()
                    _sync()
                    outs[vname] = res
                    r["wall_ms"] = _wall(fn, args.reps)
                    r["host_ms"] = _host(fn, args.reps)
                    r["pipelined_ms_per_call"] = _pipelined(fn, args.reps)
                    log.write(f"\n=== {key} / {vname} ===\n")
                    r["profile"] = _profile(fn, args.profile_calls, log)
                    r["graph_kernels_only"] = _graph(
                        v["tr"], windows, sizes, spec, layout, rows, args.reps
                    )
                    busy = r["profile"]["gpu_busy_us_per_call"] / 1e3
                    r["fraction_of_copy_bandwidth"] = {
                        "wall_min": frac(moved, r["wall_ms"]["min"]),
                        "pipelined": frac(moved, r["pipelined_ms_per_call"]),
                        "gpu_busy": frac(moved, busy),
                        "graph_replay_min": frac(
                            moved, r["graph_kernels_only"]["replay_ms"]["min"]
                        ),
                    }
                    r["x_floor_wall_min"] = round(
                        r["wall_ms"]["min"] * 1e3 / row["floor_us_at_copy_bandwidth"], 2
                    )
                    r["x_floor_gpu_busy"] = round(busy * 1e3 / row["floor_us_at_copy_bandwidth"], 2)
                except Exception as e:  # noqa: BLE001 - keep the other measurements
                    r["error"] = f"{type(e).__name__}: {e}"
                    report["errors"].append(f"{key}/{vname}: {traceback.format_exc()[-1500:]}")
                row["variants"][vname] = r
                print(
                    key,
                    vname,
                    json.dumps(
                        {k: r.get(k) for k in ("wall_ms", "host_ms", "pipelined_ms_per_call")}
                    ),
                    flush=True,
                )
                dump()
            if "old" in outs and "new" in outs:
                row["new_equals_old"] = {
                    "pixel_values": bool(torch.equal(outs["new"][0], outs["old"][0])),
                    "grid_thw": bool(torch.equal(outs["new"][1], outs["old"][1])),
                }
            dump()

    if not args.no_sweep:
        # Leads: tile sizes of the new kernels (module constants read at launch), NCHW input.
        tr = variants["new"]["tr"]
        sweep: dict = {}
        report["sweep_tool_batch_image_kernels_only_gpu_ms"] = sweep
        layout = "image"
        sizes = [smart_resize(720, 1280, spec.factor, WINDOW_MIN_PIXELS, WINDOW_MAX_PIXELS)] * 5
        rows = sum(rows_for(16, h, w, spec, layout) for h, w in sizes)
        out = torch.empty((rows, spec.patch_dim), dtype=torch.float32, device=dev)
        ref = torch.empty_like(out)
        tr.pack_windows(tool, sizes, spec, layout, ref)
        base = (tr.BLOCK_R, tr.BLOCK_C)
        configs = [base, (16, 64), (8, 128), (32, 64), (16, 128), (32, 32), (8, 64), (4, 64)]
        for br, bc in dict.fromkeys(configs):
            try:
                tr.BLOCK_R, tr.BLOCK_C = br, bc
                f = lambda: tr.pack_windows(tool, sizes, spec, layout, out)  # noqa: E731
                f()
                _sync()
                sweep[f"R{br}_C{bc}"] = {
                    "gpu_ms": _events_ms(f, 20),
                    "equal": bool(torch.equal(out, ref)),
                }
            except Exception as e:  # noqa: BLE001 - a failing tile size is a result too
                sweep[f"R{br}_C{bc}"] = {"error": f"{type(e).__name__}: {e}"}
            finally:
                tr.BLOCK_R, tr.BLOCK_C = base
            dump()
        try:
            nchw = [w.contiguous() for w in tool]
            f = lambda: tr.pack_windows(nchw, sizes, spec, layout, out)  # noqa: E731
            f()
            _sync()
            sweep[f"nchw_contiguous_input_R{base[0]}_C{base[1]}"] = {
                "gpu_ms": _events_ms(f, 20),
                "equal": bool(torch.equal(out, ref)),
            }
        except Exception as e:  # noqa: BLE001
            sweep[f"nchw_contiguous_input_R{base[0]}_C{base[1]}"] = {
                "error": f"{type(e).__name__}: {e}"
            }
        dump()
    dump()
    print(
        json.dumps(
            {
                k: {
                    vn: {
                        "wall_min": vv.get("wall_ms", {}).get("min"),
                        "gpu_busy_us": vv.get("profile", {}).get("gpu_busy_us_per_call"),
                        "launches": vv.get("profile", {}).get("kernel_launches_per_call"),
                        "syncs": vv.get("profile", {}).get("stream_syncs_per_call"),
                    }
                    for vn, vv in w["variants"].items()
                }
                for k, w in report["workloads"].items()
            },
            indent=1,
        )
    )
    print("sweep", json.dumps(report.get("sweep_tool_batch_image_kernels_only_gpu_ms")))
    print("errors", len(report["errors"]))
    for e in report["errors"]:
        print(e)
    return 0


if __name__ == "__main__":
    sys.exit(main())
