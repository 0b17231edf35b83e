"""Seconds per GB of the folder weight push (server mode): the push before the bucketed gather
(the baseline) against the bucketed one, in the same process, on one CPU rank.

Why: the folder push writes the policy to disk and has the server reload it every step; the
baseline writes the whole state dict in the learner's dtype from one thread (``save_pretrained``),
so an fp32 policy served in bf16 writes twice the bytes the server keeps. The new push gathers
bucket by bucket, casts to the serving dtype and writes one safetensors shard a bucket on
several threads while the next bucket is gathered; with overlap it returns once the weights are
gathered and finishes on a thread.

Model: ``paravt.models.tiny.build_tiny("qwen3-vl", preset="bench")``, random, fp32 (120 M
parameters, 0.48 GB): a Qwen3-VL with a real vision-tower width, built in memory (no download).

Rows, each pushed by one push object for the whole run (as a trainer keeps it), its first push
not counted (first-touch costs), then ``--repeats`` pushes, the order of the rows rotated each
round; medians reported. Against a server that serves in bf16 (GPUs):

- ``baseline``: ``FolderReloadPush(state_dict=model.state_dict, save=save_checkpoint(model))``,
  what ``server_generation`` built before: ``save_pretrained`` of the fp32 state dict;
- ``bucketed``: the push ``server_generation`` builds now without overlap: ``--bucket-mb``
  buckets of views, cast to bf16 and written by ``--threads`` writers (into cast buffers kept
  from push to push) while the next bucket is gathered;
- ``overlapped``: the same with overlap (the default): ``push`` returns once the buckets are
  handed over (``blocked_s``), the casts, writes and the reload end on threads (``seconds``: at
  ``settle``).

Against a server that serves in fp32 (CPUs), where nothing is cast: ``baseline_fp32_server``
and ``bucketed_fp32_server``: the same bytes, so they show what the shards and threads alone do.

The reload is a stand-in in this process (``StandInServer``): weights held in the server's
dtype, allocated once, and every tensor of the folder's shards copied into them (cast where the
files hold fp32 and the server bf16, as vLLM's loader casts what it reads); no vLLM server runs
here, so its own re-layout is not counted. Writes land in the page cache of ``--dir`` (no fsync,
as ``save_pretrained`` does none). ``s_per_gb`` is seconds per GB of the policy in its learner
dtype (fp32, 0.48 GB), one denominator for every row; ``gb_written`` says what each row wrote;
``write_s`` is the push without the reload, ``reload_s`` the reload. Memory: ``peak_held_mb``
is the most gathered bytes the push had handed to its writers and not yet written (counted
whole even where they are views of the live weights, which take no memory of their own: a
bound, what copies would take on GPUs or under sharding), ``scratch_mb`` the writers' cast
buffers kept from push to push (allocated by the first, uncounted push), ``rss_peak_mb`` the
process's anonymous resident memory (``RssAnon``: the file pages the stand-in reload maps are
not counted) above its level before the push, sampled every 2 ms.

    OMP_NUM_THREADS=1 python benchmarks/bench_weight_push.py

Output: ``benchmarks/results/bench_weight_push.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import threading
import time
from pathlib import Path

import torch
from safetensors import safe_open

from paravt.models.tiny import build_tiny
from paravt.rollout.weight_gather import gathered_buckets
from paravt.rollout.weight_push import FolderReloadPush, save_checkpoint

RESULTS = Path(__file__).resolve().parent / "results"
#: (row, the stand-in server's dtype, the push): a server serves in bf16 (GPUs) or fp32 (CPU)
ROWS = (
    ("baseline", torch.bfloat16, "baseline"),
    ("bucketed", torch.bfloat16, "bucketed"),
    ("overlapped", torch.bfloat16, "overlapped"),
    ("baseline_fp32_server", torch.float32, "baseline"),
    ("bucketed_fp32_server", torch.float32, "bucketed"),
)


def rss_bytes() -> int:
    """Anonymous resident memory (``RssAnon``): the file pages the reload maps are not counted."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon in /proc/self/status")


class RssPeak:
    """The resident set's peak above its level at the start, sampled on a thread."""

    def __init__(self, every_s: float = 0.002):
        self.every_s, self.base, self.peak = every_s, rss_bytes(), 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_bytes() - self.base)
            time.sleep(self.every_s)

    def __enter__(self) -> RssPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes() - self.base)


class StandInServer:
    """The reload's stand-in: weights held in the serving dtype (allocated once, as a server's
    parameters are), each reload copying every tensor of the folder's shards into them (a cast
    where the files hold another dtype), as vLLM's loader does with what it reads."""

    def __init__(self, model, dtype):
        self.params = {k: torch.empty(v.shape, dtype=dtype) for k, v in model.state_dict().items()}
        self.seconds: list[float] = []

    def reload(self, folder: str) -> None:
        t0 = time.perf_counter()
        loaded = set()
        for shard in sorted(Path(folder).glob("*.safetensors")):
            with safe_open(str(shard), framework="pt") as f:
                for name in f.keys():  # noqa: SIM118 - safe_open is not a mapping
                    self.params[name].copy_(f.get_tensor(name))
                    loaded.add(name)
        assert loaded == set(self.params), "the folder lacks tensors the server holds"
        self.seconds.append(time.perf_counter() - t0)


def make_push(kind: str, model, server: StandInServer, dtype, folder: Path, a):
    if kind == "baseline":
        return FolderReloadPush(
            folder, state_dict=model.state_dict, save=save_checkpoint(model), reload=server.reload
        )
    bucket = int(a.bucket_mb * 2**20)
    overlap = kind == "overlapped"
    return FolderReloadPush(  # as server_generation builds it
        folder, reload=server.reload, threads=a.threads, overlap=overlap,
        buckets=lambda: gathered_buckets(
            model, dtype=dtype, bucket_bytes=bucket, keep=True, own=False
        ),
    )  # fmt: skip


def one(push: FolderReloadPush, server: StandInServer, step: int) -> dict:
    with RssPeak() as rss:
        t0 = time.perf_counter()
        push.push(step)
        blocked = time.perf_counter() - t0
        push.settle()
        seconds = time.perf_counter() - t0
    folder = push.folder / f"step-{step}"
    last = push.last
    return {
        "seconds": seconds,
        "blocked_s": blocked,
        "reload_s": server.seconds[-1],
        "bytes_written": sum(p.stat().st_size for p in folder.iterdir()),
        "peak_held_bytes": last.peak_held_bytes if last is not None else None,
        "rss_peak_bytes": rss.peak,
        "scratch_bytes": push.scratch.bytes,
    }


def summary(runs: list[dict], model_gb: float) -> dict:
    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    held = [r["peak_held_bytes"] for r in runs if r["peak_held_bytes"] is not None]
    return {
        "seconds": round(med("seconds"), 3),
        "s_per_gb": round(med("seconds") / model_gb, 3),
        "blocked_s": round(med("blocked_s"), 3),
        "write_s": round(med("seconds") - med("reload_s"), 3),
        "reload_s": round(med("reload_s"), 3),
        "gb_written": round(runs[0]["bytes_written"] / 1e9, 4),
        "peak_held_mb": round(max(held) / 2**20, 1) if held else None,
        "rss_peak_mb": round(max(r["rss_peak_bytes"] for r in runs) / 2**20, 1),
        "scratch_mb": round(max(r["scratch_bytes"] for r in runs) / 2**20, 1),
        "all_seconds": [round(r["seconds"], 3) for r in runs],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--bucket-mb", type=float, default=64.0)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--dir", default=None, help="where the pushes write (default: a temp folder)")
    ap.add_argument("--out", default=str(RESULTS / "bench_weight_push.json"))
    a = ap.parse_args(argv)
    model, _ = build_tiny("qwen3-vl", preset="bench")
    params = sum(p.numel() for p in model.parameters())
    model_gb = sum(t.numel() * t.element_size() for t in model.state_dict().values()) / 1e9
    load_start = os.getloadavg()
    runs: dict[str, list[dict]] = {r: [] for r, _, _ in ROWS}
    with tempfile.TemporaryDirectory(dir=a.dir) as tmp:
        setups = {}
        for row, dtype, kind in ROWS:  # one push a row for the whole run, as a trainer keeps it
            server = StandInServer(model, dtype)
            push = make_push(kind, model, server, dtype, Path(tmp) / row, a)
            one(
                push, server, 0
            )  # first-touch costs (the server's weights, page cache): not counted
            setups[row] = (push, server)
        for i in range(a.repeats):
            order = ROWS[i % len(ROWS) :] + ROWS[: i % len(ROWS)]
            for row, _, _ in order:
                runs[row].append(one(*setups[row], i + 1))
    results = {r: summary(runs[r], model_gb) for r, _, _ in ROWS}
    for row, dtype, _ in ROWS:
        base = "baseline" if dtype == torch.bfloat16 else "baseline_fp32_server"
        results[row]["speedup_vs_baseline"] = round(
            results[base]["seconds"] / results[row]["seconds"], 2
        )
    out = {
        "benchmark": "bench_weight_push",
        "command": "OMP_NUM_THREADS=1 python benchmarks/bench_weight_push.py "
        f"--repeats {a.repeats} --bucket-mb {a.bucket_mb:g} --threads {a.threads}",
        "setup": {
            "model": "build_tiny('qwen3-vl', preset='bench'), random, fp32",
            "parameters": params,
            "model_gb_fp32": round(model_gb, 4),
            "reload": "stand-in in this process: every tensor of the shards copied into "
            "weights held in the server's dtype (allocated once)",
            "baseline": "FolderReloadPush(state_dict=model.state_dict, "
            "save=save_checkpoint(model)): save_pretrained of the fp32 state dict",
            "s_per_gb": "seconds per GB of the fp32 policy (model_gb_fp32), every row",
            "bucket_mb": a.bucket_mb,
            "threads": a.threads,
        },
        "results": results,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cpus": os.cpu_count(),
            "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
            "load_avg_start": [round(x, 2) for x in load_start],
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        },
    }
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
