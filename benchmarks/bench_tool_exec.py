"""Tool execution and overview sampling, end to end to ``pixel_values``: the reference vs paravt.

Same process, same video, per codec. Each row is a long video built at benchmark time from the
real clips in ``../shared/videos`` (concatenated, scaled to 1280x720 @ 30, looped): a 30 s unit
is encoded with the row's encoder settings (``CODECS``: x264 ``medium`` and ``veryfast`` with
B-frames and 10 s / 5 s GOPs, x264 ``veryfast`` with an exact 2 s GOP and with open GOPs, HEVC
with libx265, VP9 with libvpx-vp9) and stream-copied end to
end to ``--minutes`` (the unit is a whole number of GOPs, so the long file has the GOP structure
of one long encode, without encoding for ten minutes). ``testsrc2`` (synthetic, unusually cheap
to decode) is kept as one row. A row whose encoder this machine lacks, whose video does not
decode, or that fails anywhere later (a file that opens but breaks mid-decode, a path that
raises) is skipped with the reason in the JSON (``{"skipped": "<Type>: <message>"}``, the
traceback on stderr); the run goes on, and the JSON is rewritten after every row
(``"complete": false`` until the last).

Reference (docs/PREPROCESSING.md §7, ParaVT's released path): per crop_video call an ``ffprobe``
subprocess for the duration, then ``qwen_vl_utils.fetch_video`` (torchcodec backend, decoder
opened per call, exact seek mode, index-based frames, resize to the training pixel budget at
factor 28), then the HF Qwen3-VL image processor on those frames (``pixel_values``). Overview:
``fetch_video(nframes=K)`` then the processor.

Ours: one ``execute_windows`` batch (each video opened once, frames de-duplicated across calls,
GOP-aligned lanes on ``workers`` decoders, disposable H.264/HEVC pictures left out of the decode)
or ``VideoSource.overview`` (``exact`` and ``keyframe``, on ``workers`` lanes), then the engine's
own ``paravt.agent.vision.preprocess`` (the kernels, every frame an image, on
``preprocess_lanes(workers)`` threads) as the engine calls it: once per episode, on the windows
that episode is the first to get (the training batch: 8 episodes of 3 calls), with both resize
arithmetics (``uint8``, the CPU default, and ``float``); ``decode_only`` stops at uint8 frames.

Cases: five windows of 10-30 s; a training-shaped batch (8 generations x 3 calls drawn from 6
distinct windows); 64-frame overviews. Runs are interleaved (reference, then each of ours) so
machine load affects all alike; medians after warm-up. Next to each wall time: CPU seconds and
the peak resident memory above the level at the call's start (sampled every 5 ms).

Cores: ``--cores 1,2`` runs the ``--scaling-codecs`` rows pinned to 1 and then 2 CPUs (like
``taskset``, inherited by decoder threads and the ffprobe children) and predicts 16 cores from
the two (see benchmarks/README.md, "Core scaling"); the other rows run on the largest count.

    python benchmarks/bench_tool_exec.py                   # the full run, ~15 min on 2 cores
    python benchmarks/bench_tool_exec.py --smoke           # every row and case, tiny and quick
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Self

import torch

RESULTS = Path(__file__).resolve().parent / "results"
SHARED_VIDEOS = Path(__file__).resolve().parents[2] / "shared" / "videos"
MIN_PIXELS, MAX_PIXELS = 784, 50176  # training pixel budget (docs/PROTOCOL.md §3)
ARCH = "qwen3-vl"  # the model family ParaVT trains (processor patch 16, merge 2)

#: the real clips the footage is cut from (shared/videos/README.md: real footage)
FOOTAGE_CLIPS = ("decord__flipping_a_pancake.mkv", "mediabunny__trim-buck-bunny.webm")
UNIT_SECONDS = 30  # one encoded unit, a whole number of GOPs of every row; looped by stream copy
SIZE, FPS = "1280x720", 30

#: benchmark rows: encoder, its settings, GOP in seconds (None: the encoder's default), source
CODECS: dict[str, dict] = {
    "x264_medium": {
        "encoder": "libx264", "args": ["-preset", "medium", "-bf", "3"], "gop_s": 10,
        "source": "footage", "ext": "mp4",
    },
    "x264_veryfast": {
        "encoder": "libx264", "args": ["-preset", "veryfast"], "gop_s": 5,  # 3 B-frames, pyramid
        "source": "footage", "ext": "mp4",
    },
    "x264_veryfast_gop2": {
        "encoder": "libx264", "args": ["-preset", "veryfast", "-sc_threshold", "0"], "gop_s": 2,
        "source": "footage", "ext": "mp4",
        "note": "-sc_threshold 0: no scene-cut keyframes, so every GOP is exactly gop_s (the "
                "other x264 rows keep x264's scene-cut keyframes, as their committed results "
                "were encoded: 160 keyframes in 600 s at a 5 s GOP, not 120)",
    },
    "x264_veryfast_open_gop": {
        "encoder": "libx264", "args": ["-preset", "veryfast", "-x264-params", "open-gop=1"],
        "gop_s": 5, "source": "footage", "ext": "mp4",
        "note": "open GOPs: keyframes are non-IDR I pictures (x264's default is closed GOPs)",
    },
    "x264_veryfast_intra_refresh": {
        "encoder": "libx264", "args": ["-preset", "veryfast", "-x264-params", "intra-refresh=1"],
        "gop_s": 5, "source": "footage", "ext": "mp4",
        "note": "periodic intra refresh: the only IDR of each 30 s unit is its first picture; the "
                "recovery points every 5 s are not restart points (paravt.video.bitstream), so a "
                "window decodes from its unit's IDR, up to 30 s back",
    },
    "x265": {
        "encoder": "libx265", "args": ["-preset", "veryfast", "-x265-params", "log-level=error"],
        "gop_s": 5, "source": "footage", "ext": "mp4",
    },
    "vp9": {
        "encoder": "libvpx-vp9",
        "args": ["-deadline", "good", "-cpu-used", "5", "-row-mt", "1", "-b:v", "2M"],
        "gop_s": 5, "source": "footage", "ext": "webm",
    },
    "testsrc2_x264": {
        "encoder": "libx264", "args": ["-preset", "veryfast"], "gop_s": None,
        "source": "testsrc2", "ext": "mp4",
    },
}  # fmt: skip


class RowSkipped(Exception):
    """This row cannot run here (encoder missing, clip missing, video not decodable)."""


def failure_reason(e: BaseException) -> str:
    """``"<Type>: <message>"`` of a row's failure, and of the error it was raised while handling
    (qwen-vl-utils hides torchcodec's error behind its torchvision fallback's)."""
    reason = f"{type(e).__name__}: {e}"
    inner = e.__cause__ or (None if e.__suppress_context__ else e.__context__)
    if inner is not None:
        reason += f" (while handling {type(inner).__name__}: {inner})"
    return reason


# -- the long videos --------------------------------------------------------------------------
def _ffmpeg() -> str:
    """``ffmpeg`` by name (found on PATH when it runs), so the commands a result records name the
    tool, not where one machine keeps it."""
    if shutil.which("ffmpeg") is None:
        raise RowSkipped("ffmpeg is not installed")
    return "ffmpeg"


def _run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RowSkipped(f"ffmpeg failed ({done.returncode}): {done.stderr.strip()[-300:]}")


def settings_tag(*settings: object) -> str:
    """8 hex digits naming the settings a cached file was made with: change an encoder argument
    (or the GOP, size, clips) and the file gets a new name, so it is encoded again."""
    return hashlib.sha1(json.dumps(settings, default=str).encode()).hexdigest()[:8]


def footage_pieces(cache: Path, size: str = SIZE) -> tuple[Path, list[str]]:
    """The real clips back to back at ``size`` @ 30 (near-lossless x264), made once."""
    clips = [SHARED_VIDEOS / name for name in FOOTAGE_CLIPS]
    missing = [str(c) for c in clips if not c.is_file()]
    if missing:
        raise RowSkipped(f"real clips missing: {missing} (the shared videos sit beside the repo)")
    w, h = size.split("x")
    chains = "".join(
        f"[{i}:v]scale={w}:{h}:flags=bicubic,setsar=1,fps={FPS},format=yuv420p[v{i}];"
        for i in range(len(clips))
    )
    graph = chains + "".join(f"[v{i}]" for i in range(len(clips))) + f"concat=n={len(clips)}:v=1[v]"
    cmd = [_ffmpeg(), "-y", "-loglevel", "error"]
    for c in clips:
        cmd += ["-i", str(c)]
    encode = ["-filter_complex", graph, "-map", "[v]", "-an", "-c:v", "libx264", "-preset",
              "ultrafast", "-crf", "8"]  # fmt: skip
    cmd += encode
    out = cache / f"footage_pieces_{size}_{FPS}fps_{settings_tag(FOOTAGE_CLIPS, encode)}.mkv"
    if not out.is_file():
        _run(cmd + [str(out.with_suffix(".part.mkv"))])
        out.with_suffix(".part.mkv").rename(out)
    return out, cmd + [str(out)]


def ensure_video(
    cache: Path, codec: str, minutes: float, unit_seconds: int = UNIT_SECONDS, size: str = SIZE
) -> tuple[Path, dict]:
    """The row's long video (cached) and how it was made (recorded in the JSON)."""
    spec = CODECS[codec]  # an encoder this ffmpeg lacks fails the encode: RowSkipped, its words
    cache.mkdir(parents=True, exist_ok=True)
    seconds = round(minutes * 60)
    gop = (
        ["-g", str(spec["gop_s"] * FPS), "-keyint_min", str(spec["gop_s"] * FPS)]
        if spec["gop_s"]
        else []
    )
    encode = [*gop, "-c:v", spec["encoder"], *spec["args"], "-pix_fmt", "yuv420p", "-an"]
    # the cached files' names carry the encode settings: a changed argument encodes anew
    tag = settings_tag(spec["source"], encode, FOOTAGE_CLIPS if spec["source"] == "footage" else [])
    out = cache / f"{codec}_{seconds}s_unit{unit_seconds}s_{size}_{FPS}fps_{tag}.{spec['ext']}"
    info = {"encoder": spec["encoder"], "encoder_args": spec["args"], "gop_s": spec["gop_s"],
            "source": spec["source"], "seconds": seconds, "unit_s": unit_seconds,
            "size": size, "fps": FPS, "settings_tag": tag}  # fmt: skip
    if "note" in spec:
        info["note"] = spec["note"]
    t0 = time.perf_counter()
    if spec["source"] == "testsrc2":
        cmd = [_ffmpeg(), "-y", "-loglevel", "error", "-f", "lavfi", "-i",
               f"testsrc2=size={size}:rate={FPS}", "-t", str(seconds), *encode]  # fmt: skip
        if not out.is_file():
            _run(cmd + [str(out.with_suffix(".part." + spec["ext"]))])
        info["commands"] = [cmd + [str(out)]]
    else:
        pieces, pieces_cmd = footage_pieces(cache, size)
        unit = cache / f"{codec}_unit{unit_seconds}s_{size}_{tag}.{spec['ext']}"
        unit_cmd = [_ffmpeg(), "-y", "-loglevel", "error", "-stream_loop", "-1", "-i", str(pieces),
                    "-t", str(unit_seconds), *encode, "-threads", "2"]  # fmt: skip
        if not unit.is_file():
            _run(unit_cmd + [str(unit.with_suffix(".part." + spec["ext"]))])
            unit.with_suffix(".part." + spec["ext"]).rename(unit)
        listing = cache / f"{codec}_{seconds}s_unit{unit_seconds}s_{tag}.concat.txt"
        repeats = -(-seconds // unit_seconds)
        listing.write_text("".join(f"file '{unit.name}'\n" for _ in range(repeats)))
        concat_cmd = [_ffmpeg(), "-y", "-loglevel", "error", "-f", "concat", "-safe", "0", "-i",
                      str(listing), "-c", "copy", "-t", str(seconds)]  # fmt: skip
        if not out.is_file():
            _run(concat_cmd + [str(out.with_suffix(".part." + spec["ext"]))])
        info["commands"] = [pieces_cmd, unit_cmd + [str(unit)], concat_cmd + [str(out)]]
        info["footage_clips"] = list(FOOTAGE_CLIPS)
    part = out.with_suffix(".part." + spec["ext"])
    if part.is_file():
        part.rename(out)
    info["generation_s"] = round(time.perf_counter() - t0, 1)
    return out, info


# -- the reference path ---------------------------------------------------------------------
def ffprobe_duration(path: Path) -> float:
    out = subprocess.run(
        ["ffprobe", "-v", "quiet", "-show_entries", "format=duration", "-of", "csv=p=0", str(path)],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return float(out.stdout.strip())


def reference_call(path: Path, start: float, end: float) -> torch.Tensor:
    from qwen_vl_utils.vision_process import fetch_video

    duration = ffprobe_duration(path)
    if start >= duration:
        raise ValueError("start beyond duration")
    end = min(end, duration)
    return fetch_video(
        {
            "video": f"file://{path}",
            "fps": 1,
            "min_frames": 1,
            "max_frames": 16,
            "min_pixels": MIN_PIXELS,
            "max_pixels": MAX_PIXELS,
            "video_start": start,
            "video_end": end,
        }
    )


def reference_overview(path: Path, k: int) -> torch.Tensor:
    from qwen_vl_utils.vision_process import fetch_video

    return fetch_video(
        {"video": str(path), "nframes": k, "min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS}
    )


_PROCESSOR = None


def hf_processor():
    """transformers' Qwen-VL image processor at the same budget (kernels.bench builds it)."""
    global _PROCESSOR
    if _PROCESSOR is None:
        from paravt.kernels.bench import BenchKernelsConfig, _hf_processors

        cfg = BenchKernelsConfig(arch=ARCH, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
        _PROCESSOR = _hf_processors(ARCH, cfg, 2)[0]
    return _PROCESSOR


def reference_pixel_values(frames: list[torch.Tensor]) -> torch.Tensor:
    """The HF processor on the reference's (already resized, float) frames, every frame an image."""
    out = hf_processor()(images=[f for w in frames for f in w], return_tensors="pt")
    return out["pixel_values"]


# -- ours -----------------------------------------------------------------------------------
def resize_like_reference(frames: torch.Tensor) -> torch.Tensor:
    """The reference's resize (qwen-vl-utils smart_resize, factor 28, AA bicubic) to float."""
    from qwen_vl_utils.vision_process import smart_resize
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.functional import resize

    h, w = smart_resize(
        frames.shape[2], frames.shape[3], factor=28, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS
    )
    return resize(frames, [h, w], interpolation=InterpolationMode.BICUBIC, antialias=True).float()


def ours_pixel_values(
    windows: list[torch.Tensor] | list[list[torch.Tensor]], resize: str, workers: int
) -> None:
    """The engine's ``agent.vision.preprocess`` on every frame of ``windows`` (stacked tensors or
    lists of frames; one image each, at the budget), in one call with the engine's ``workers``
    (the crop workers: thread lanes)."""
    from types import SimpleNamespace

    from paravt.agent.vision import preprocess
    from paravt.schema.episodes import ImageItem

    items = [ImageItem(f, 0.0, "tool", MIN_PIXELS, MAX_PIXELS) for w in windows for f in w]
    preprocess(items, SimpleNamespace(arch=ARCH), workers=workers, resize=resize)


def ours_windows(
    path: Path,
    windows: list[tuple[float, float]],
    workers: int,
    resize: str | None,
    threads: int = 1,
    skip: bool = True,
    per_episode: int | None = None,
):
    """``execute_windows``, then (``resize`` not None) the engine's preprocessing: the calls in
    episodes of ``per_episode`` (None: one episode), each episode preprocessing in one call the
    windows no earlier episode had (identical windows share one tensor and its rows)."""
    from paravt.tools import CropConfig, WindowRequest, execute_windows

    reqs = [WindowRequest(str(path), {"start_time": s, "end_time": e}) for s, e in windows]
    batch = execute_windows(
        reqs, CropConfig(workers=workers, decoder_threads=threads, skip_disposable=skip)
    )
    assert all(r.ok for r in batch.results), [r.error for r in batch.results if not r.ok]
    if resize is not None:
        step = per_episode or len(batch.results)
        done: set[int] = set()
        for at in range(0, len(batch.results), step):
            new = {id(r.clip): r.clip.parts for r in batch.results[at : at + step]}
            todo = [f for key, f in new.items() if key not in done]
            done.update(new)
            if todo:
                ours_pixel_values(todo, resize, workers)
    return batch.stats


def ours_overview(
    path: Path, k: int, mode: str, workers: int, resize: str | None, threads: int = 1
):
    from paravt.video import VideoSource

    src = VideoSource(path, num_threads=threads)
    frames = src.overview(k, mode, workers=workers)  # as the engine: the crop workers' lanes
    if resize is not None:  # one preprocess call on the frames, as the engine makes it
        ours_pixel_values([frames.parts], resize, workers)
    return len(frames)


# -- lanes ------------------------------------------------------------------------------------
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
        sum(
            c
            for c, _ in gop_groups(
                src.table, sorted({i for _, i in window_plan(src, s, e, CropConfig())})
            )
        )
        for s, e in windows
    )
    out = {"gop_frames_if_each_call_decoded_alone": per_call}
    for w in workers:
        lanes = plan_lanes({src.path: needed}, {src.path: src.table}, w)
        costs = [lane.cost for lane in lanes]
        out[f"workers{w}"] = {
            "lanes": len(costs),
            "gop_frames_total": sum(costs),
            "max_lane": max(costs),
            "ideal_speedup_on_free_cores": round(sum(costs) / max(costs), 2),
        }
    return out


# -- timing and memory ------------------------------------------------------------------------
def cpu_seconds() -> float:
    """CPU time of this process (all threads) plus finished children (the ffprobe calls)."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


_PAGE = os.sysconf("SC_PAGE_SIZE")


def rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * _PAGE


class PeakRSS:
    """Peak resident memory of this process above its level at entry, sampled every 5 ms.

    ``ru_maxrss`` only ever grows within a process, so it cannot tell two interleaved paths
    apart; a sampling thread can (torch and torchcodec release the GIL while they work).
    """

    def __enter__(self) -> Self:
        self.base = self.peak = rss_bytes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, rss_bytes())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_bytes())

    @property
    def above_start_mb(self) -> float:
        return (self.peak - self.base) / 2**20


def timed(fn: Callable[[], object]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak MB above the start) of one call."""
    with PeakRSS() as mem:
        c0, t0 = cpu_seconds(), time.perf_counter()
        fn()
        wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    return wall, cpu, mem.above_start_mb


def run_case(
    name: str, reference: Callable[[], object], ours: dict[str, Callable[[], object]], repeats: int
) -> dict:
    """Interleave reference and ours; medians of wall time, CPU time and peak memory; ratios
    reference / ours. CPU time is the work done (decode, resize, subprocesses); wall time also
    reflects how much of the machine each path got."""
    keys = ["reference", *ours]
    wall: dict[str, list[float]] = {k: [] for k in keys}
    cpu: dict[str, list[float]] = {k: [] for k in keys}
    mem: dict[str, list[float]] = {k: [] for k in keys}
    for rep in range(repeats):
        for key, fn in [("reference", reference), *ours.items()]:
            w, c, m = timed(fn)
            wall[key].append(w)
            cpu[key].append(c)
            mem[key].append(m)
        print(
            f"  {name} rep {rep + 1}/{repeats}: "
            + ", ".join(f"{k}={wall[k][-1]:.2f}s/{mem[k][-1]:.0f}MB" for k in keys),
            file=sys.stderr,
            flush=True,
        )
    mw = {k: statistics.median(v) for k, v in wall.items()}
    mc = {k: statistics.median(v) for k, v in cpu.items()}
    return {
        "median_wall_s": {k: round(v, 3) for k, v in mw.items()},
        "median_cpu_s": {k: round(v, 3) for k, v in mc.items()},
        "median_peak_rss_above_start_mb": {
            k: round(statistics.median(v), 1) for k, v in mem.items()
        },
        "ratio_reference_over_ours": {
            k: round(mw["reference"] / v, 2) for k, v in mw.items() if k != "reference"
        },
        "cpu_ratio_reference_over_ours": {
            k: round(mc["reference"] / v, 2) for k, v in mc.items() if k != "reference"
        },
        "samples_wall_s": {k: [round(x, 3) for x in v] for k, v in wall.items()},
    }


def pick_windows(
    rng: random.Random, duration: float, n: int, lengths: tuple[float, ...] = (10, 15, 20, 25, 30)
) -> list[tuple[float, float]]:
    """``n`` random windows of the given lengths inside ``[0, duration]``, starting at least 1 s
    before the end where the video allows. A video shorter than a length gets the whole video
    (start 0, end ``duration``) instead of a window that starts before 0 or ends past the end.
    On a video longer than every length plus 1 s the draws are those of the unclamped rule, so
    the committed rows keep their windows."""
    out = []
    for _ in range(n):
        length = min(rng.choice(lengths), max(duration, 0.0))
        start = round(rng.uniform(0, max(0.0, duration - length - 1)), 1)
        out.append((start, round(min(start + length, duration), 3)))
    return out


# -- cores --------------------------------------------------------------------------------------
_ALLOWED_CPUS = sorted(os.sched_getaffinity(0))  # before any pinning


def pin_cores(n: int) -> list[int]:
    """Pin this process (and the threads and children it starts from now on) to the first ``n``
    CPUs it was allowed at start, as ``taskset`` would; returns the CPUs."""
    if n > len(_ALLOWED_CPUS):
        raise SystemExit(f"--cores {n}: only {len(_ALLOWED_CPUS)} CPUs are allowed to this process")
    cpus = _ALLOWED_CPUS[:n]
    os.sched_setaffinity(0, cpus)
    return cpus


def predict_cores(wall_1: float, wall_2: float, cores: int, lanes: int | None = None) -> dict:
    """Amdahl's law fitted to two points: ``wall(n) = serial + parallel / min(n, lanes)``.

    ``parallel = 2 * (wall_1 - wall_2)`` and ``serial = wall_1 - parallel``; ``lanes`` caps the
    parallelism of a path that cannot use more threads than it has lanes (decode lanes of a
    batch). A negative fitted share (noise, or a path that got slower with a second core) is
    clamped to zero.
    """
    parallel = max(0.0, 2.0 * (wall_1 - wall_2))
    serial = max(0.0, wall_1 - parallel)
    used = min(cores, lanes) if lanes else cores
    return {
        "serial_s": round(serial, 3),
        "parallel_s": round(parallel, 3),
        "predicted_wall_s": round(serial + parallel / max(1, used), 3),
        "threads_used": used,
    }


# -- one row ------------------------------------------------------------------------------------
def vp9_disposable_share(path: Path, packets: int = 600) -> dict:
    """How many VP9 frames refresh no reference slot (the only ones a decode could leave out)."""
    import av

    def frames_of(data: bytes) -> list[bytes]:
        marker = data[-1] if data else 0
        if marker & 0xE0 == 0xC0:  # a superframe: its index lists the frame sizes
            count, size_bytes = (marker & 7) + 1, ((marker >> 3) & 3) + 1
            index_len = 2 + size_bytes * count
            if len(data) >= index_len and data[-index_len] == marker:
                sizes, at, out = data[-index_len + 1 : -1], 0, []
                for j in range(count):
                    n = int.from_bytes(sizes[j * size_bytes : (j + 1) * size_bytes], "little")
                    out.append(data[at : at + n])
                    at += n
                return out
        return [data]

    def refreshes(frame: bytes) -> int | None:
        bits = int.from_bytes(frame[:4].ljust(4, b"\0"), "big")
        pos = 32

        def read(n: int) -> int:
            nonlocal pos
            pos -= n
            return (bits >> pos) & ((1 << n) - 1)

        read(2)  # frame marker
        profile = read(1) | (read(1) << 1)
        if profile == 3:
            read(1)
        if read(1):  # show_existing_frame: no decode at all
            return None
        key, show, error_resilient = read(1) == 0, read(1), read(1)
        if key:
            return 0xFF
        intra_only = 0 if show else read(1)
        if not error_resilient:
            read(2)
        return 0xFF if intra_only else read(8)

    seen = disposable = 0
    with av.open(str(path)) as inp:
        for pkt in inp.demux(inp.streams.video[0]):
            if pkt.size == 0:
                continue
            flags = [refreshes(f) for f in frames_of(bytes(pkt))]
            seen += 1
            disposable += all(f == 0 for f in flags if f is not None)
            if seen >= packets:
                break
    return {"packets": seen, "refresh_no_reference_slot": disposable}


def run_row(video: Path, args, cores: int, workers: int, cases_wanted: str) -> dict:
    from paravt.video import VideoSource

    try:
        src = VideoSource(video)
        meta = src.meta
        src.overview(2)  # the row is skipped, not the run, when the file does not decode
    except Exception as e:  # noqa: BLE001 - any failure to open or decode: skip with the reason
        raise RowSkipped(f"cannot decode {video}: {type(e).__name__}: {e}") from None
    rng = random.Random(args.seed)
    lengths = tuple(float(x) for x in args.window_seconds.split(","))
    five = pick_windows(rng, meta.duration, 5, lengths)
    six = pick_windows(rng, meta.duration, 6, lengths)
    calls24 = [rng.choice(six) for _ in range(8 * 3)]
    wanted = set(cases_wanted.split(","))

    def ours_set(make: Callable[..., Callable[[], object]]) -> dict[str, Callable[[], object]]:
        return {
            "ours_uint8": make(workers, "uint8"),
            "ours_float": make(workers, "float"),
            "ours_decode_only": make(workers, None),
        }

    print(f"warm-up ({cores} cores, {workers} workers)", file=sys.stderr)
    for _ in range(args.warmup):
        reference_pixel_values([reference_call(video, *five[0])])
        ours_windows(video, [five[0]], workers, "uint8")
        reference_overview(video, 4)
        ours_overview(video, 4, "exact", 1, "uint8")

    cases: dict[str, dict] = {}
    for name, windows, repeats, target, per_episode in (
        ("five_windows", five, args.repeats, 2.0, None),  # one episode, five calls
        ("training_batch", calls24, args.slow_repeats, 6.0, 3),  # 8 generations x 3 calls
    ):
        if name not in wanted:
            continue
        print(f"case {name}", file=sys.stderr)
        cases[name] = {
            "windows": windows,
            **run_case(
                name,
                lambda w=windows: reference_pixel_values(
                    [reference_call(video, s, e) for s, e in w]
                ),
                ours_set(
                    lambda n, r, w=windows, e=per_episode: (
                        lambda: ours_windows(video, w, n, r, per_episode=e)
                    )
                ),
                repeats,
            ),
            "stats": ours_windows(video, windows, workers, None).to_dict(),
            "target_ratio": target,
        }
    for mode, target in (("exact", 1.5), ("keyframe", 8.0)):
        if f"overview_{mode}" not in wanted:
            continue
        print(f"case overview_{mode}", file=sys.stderr)
        cases[f"overview_{mode}"] = {
            "k": args.overview_k,
            **run_case(
                f"overview_{mode}",
                lambda: reference_pixel_values([reference_overview(video, args.overview_k)]),
                ours_set(
                    lambda n, r, m=mode: lambda: ours_overview(video, args.overview_k, m, n, r)
                ),
                args.slow_repeats if mode == "exact" else args.repeats,
            ),
            "target_ratio": target,
        }
    if "lane_balance" in wanted:
        cases["lane_balance"] = {
            "five_windows": lane_balance(video, five, sorted({workers, args.predict_cores})),
            "training_batch": lane_balance(video, calls24, sorted({workers, args.predict_cores})),
        }
    row = {
        "video": {
            "path": str(video),
            "duration_s": meta.duration,
            "fps": meta.average_fps,
            "frames": meta.num_frames,
            "size": f"{meta.width}x{meta.height}",
            "codec": meta.codec,
            "keyframes": meta.num_keyframes,
        },
        "cores": cores,
        "workers": workers,
        "cases": cases,
    }
    if meta.codec == "vp9":
        row["vp9_disposable_frames"] = vp9_disposable_share(video)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--codecs", default=",".join(CODECS), help=f"Rows to run, of {list(CODECS)}.")
    ap.add_argument(
        "--video",
        type=Path,
        default=None,
        help="Also run one row on this file (its codec as it is).",
    )
    ap.add_argument("--minutes", type=float, default=10.0, help="Length of each row's video.")
    ap.add_argument("--size", default=SIZE, help="Frame size of the built videos.")
    ap.add_argument(
        "--unit-seconds",
        type=int,
        default=UNIT_SECONDS,
        help="Length of the encoded unit that is looped (a multiple of every GOP).",
    )
    ap.add_argument("--cache-dir", type=Path, default=Path("/tmp/paravt-bench"))
    ap.add_argument(
        "--cores",
        default="",
        help="Comma-separated CPU counts to pin to (e.g. 1,2); default: all allowed.",
    )
    ap.add_argument(
        "--scaling-codecs",
        default="x264_veryfast",
        help="Rows also measured at the smaller --cores counts (--scaling-cases).",
    )
    ap.add_argument(
        "--scaling-cases",
        default="five_windows,overview_keyframe,lane_balance",
        help="Cases measured at the smaller --cores counts.",
    )
    ap.add_argument(
        "--full-codecs",
        default="x264_veryfast,x264_medium",
        help="Rows that run every case of --cases; the others run --short-cases.",
    )
    ap.add_argument(
        "--short-cases",
        default="five_windows,overview_keyframe,lane_balance",
        help="Cases of the rows not in --full-codecs.",
    )
    ap.add_argument("--predict-cores", type=int, default=16)
    ap.add_argument(
        "--workers",
        type=int,
        default=0,
        help="Decoder pool size; 0 = one per pinned core (the default engine choice).",
    )
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=1, help="Measured runs of the quick cases.")
    ap.add_argument(
        "--slow-repeats",
        type=int,
        default=1,
        help="Measured runs of the slow cases (training_batch, overview_exact).",
    )
    ap.add_argument("--overview-k", type=int, default=64)
    ap.add_argument(
        "--window-seconds",
        default="10,15,20,25,30",
        help="Lengths the random crop_video windows are drawn from.",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--cases",
        default="five_windows,training_batch,overview_exact,overview_keyframe,lane_balance",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="Every row and case once on 1-minute 320x180 videos, K=8, 2-3 s windows: "
        "checks that it all runs (timings mean nothing).",
    )
    ap.add_argument("--out", type=Path, default=RESULTS / "bench_tool_exec.json")
    args = ap.parse_args(argv)
    if args.smoke:
        args.minutes, args.repeats, args.slow_repeats, args.warmup, args.overview_k = (
            1.0,
            1,
            1,
            1,
            8,
        )
        args.unit_seconds, args.size, args.window_seconds = 10, "320x180", "2,3"
    torch.set_num_threads(1)
    t_start = time.perf_counter()
    load_start = os.getloadavg()
    cpu_start = (machine_busy_seconds(), cpu_seconds())
    allowed = len(os.sched_getaffinity(0))
    core_counts = [int(c) for c in args.cores.split(",") if c.strip()] or [allowed]
    top = max(core_counts)
    scaling = set(args.scaling_codecs.split(","))
    full = set(args.full_codecs.split(","))

    rows: dict[str, dict] = {}
    plan = [(c, None) for c in args.codecs.split(",") if c.strip()]
    import qwen_vl_utils  # noqa: F401 - the reference path: missing, nothing here can run
    import torchcodec
    import transformers

    versions = {
        "torch": torch.__version__,
        "torchcodec": torchcodec.__version__,
        "transformers": transformers.__version__,
    }

    def write(complete: bool) -> dict:
        """The JSON as it stands (after every row, so an aborted run keeps its finished rows)."""
        result = build_result(
            args, argv, rows, t_start, (load_start, cpu_start), allowed, versions, complete
        )
        args.out.parent.mkdir(parents=True, exist_ok=True)
        part = args.out.with_name(args.out.name + ".part")
        part.write_text(json.dumps(result, indent=2) + "\n")
        part.replace(args.out)
        return result

    if args.video is not None:
        plan.append((f"file:{args.video.name}", args.video.resolve()))
    for codec, given in plan:
        counts = core_counts if (codec in scaling or given is not None) else [top]
        made: dict | None = None
        try:
            if given is None and codec not in CODECS:
                raise RowSkipped(f"unknown codec row {codec!r}; choose from {list(CODECS)}")
            video, made = (
                (given, {"given": str(given)})
                if given
                else ensure_video(args.cache_dir, codec, args.minutes, args.unit_seconds, args.size)
            )
            per_cores = {}
            for n in counts:
                cpus = pin_cores(n)
                workers = args.workers or n
                if n < top:
                    cases = args.scaling_cases
                else:
                    cases = args.cases if (codec in full or given) else args.short_cases
                per_cores[f"cores{n}"] = {"cpus": cpus, **run_row(video, args, n, workers, cases)}
            rows[codec] = {"encoding": made, **per_cores}
        except RowSkipped as e:
            print(f"row {codec} skipped: {e}", file=sys.stderr)
            rows[codec] = {"skipped": str(e)}
        except Exception as e:  # noqa: BLE001 - a row's failure (a file that opens but fails to
            # decode later, a path that raises) skips that row with the reason; the run goes on
            print(f"row {codec} failed, skipped; what was caught:", file=sys.stderr)
            traceback.print_exception(e, file=sys.stderr)
            rows[codec] = {"skipped": failure_reason(e)}
        finally:
            pin_cores(allowed)
        if made is not None and "skipped" in rows[codec]:
            rows[codec]["encoding"] = made
        if len(counts) >= 2 and 1 in counts and 2 in counts and "skipped" not in rows[codec]:
            one, two = rows[codec]["cores1"]["cases"], rows[codec]["cores2"]["cases"]
            pred = {}
            for case in one:
                if "median_wall_s" not in one[case] or case not in two:
                    continue
                # ours cannot use more threads than the batch has decode lanes at that many workers
                balance = two.get("lane_balance", {}).get(case, {})
                lanes = balance.get(f"workers{args.predict_cores}", {}).get("lanes")
                pred[case] = {
                    k: predict_cores(
                        one[case]["median_wall_s"][k],
                        two[case]["median_wall_s"][k],
                        args.predict_cores,
                        None if k == "reference" else lanes,
                    )
                    for k in one[case]["median_wall_s"]
                }
                ref = pred[case]["reference"]["predicted_wall_s"]
                pred[case]["predicted_ratio_reference_over_ours"] = {
                    k: round(ref / v["predicted_wall_s"], 2)
                    for k, v in pred[case].items()
                    if k != "reference" and v["predicted_wall_s"] > 0
                }
            rows[codec][f"predicted_cores{args.predict_cores}"] = pred
        write(complete=False)

    result = write(complete=True)
    summary = {
        f"{codec}/{k}/{case}": c.get("ratio_reference_over_ours")
        for codec, row in rows.items()
        for k, v in row.items()
        if k.startswith("cores")
        for case, c in v["cases"].items()
        if "ratio_reference_over_ours" in c
    }
    print(json.dumps(summary, indent=2))
    print(f"wrote {args.out} in {result['run_s']} s", file=sys.stderr)
    return 0


#: the share of the machine's CPU time taken by other processes above which a run is "shared"
SHARED_SHARE = 0.05


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (all CPUs, /proc/stat); NaN where there is
    no /proc/stat, and then the foreign share is NaN too."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return float("nan")
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def build_result(
    args,
    argv: list[str] | None,
    rows: dict[str, dict],
    t_start: float,
    start: tuple[tuple[float, float, float], tuple[float, float]],
    allowed: int,
    versions: dict[str, str],
    complete: bool,
) -> dict:
    (load_start, (busy_start, own_start)), load_end = start, os.getloadavg()
    busy_end, own_end = machine_busy_seconds(), cpu_seconds()
    cpus = os.cpu_count() or 1
    wall = time.perf_counter() - t_start
    # CPU the rest of the machine used while this ran: the load average cannot tell it, since
    # it counts this benchmark's own decoder threads (about 2-3 on 2 quiet cores)
    foreign = max(0.0, (busy_end - busy_start) - (own_end - own_start))
    foreign_share = foreign / max(wall * cpus, 1e-9)
    return {
        "benchmark": "tool_exec",
        "command": " ".join(
            [Path(sys.argv[0]).name] + (argv if argv is not None else sys.argv[1:])
        ),
        "reference": "per call: ffprobe subprocess + qwen_vl_utils.fetch_video (torchcodec backend, "
        "decoder opened per call, exact mode, resize at factor 28 to min/max pixels "
        "784/50176) + the HF Qwen3-VL image processor on those frames; overview: "
        "fetch_video(nframes=k) + the processor",
        "ours": "execute_windows (one open per video, frames de-duplicated across the batch, "
        "GOP-aligned lanes on `workers` decoder threads, 1 FFmpeg thread each, disposable "
        "H.264/HEVC pictures left out of the decode) or VideoSource.overview on `workers` "
        "lanes, then the engine's paravt.agent.vision.preprocess (the kernels, Qwen3-VL, "
        "image layout, on `workers` threads) once per episode on the windows it is the first "
        "to get (training batch: 8 episodes x 3 calls), with resize 'uint8' or 'float'; "
        "'_decode_only' stops at uint8 frames",
        "metrics": "wall = elapsed seconds; cpu = CPU seconds of this process's threads plus the "
        "ffprobe children; peak_rss_above_start = the process's peak resident memory "
        "during the call above its level at the call's start (5 ms sampling)",
        "targets": {
            "five_windows": 2.0,
            "training_batch": 6.0,
            "overview_keyframe": 8.0,
            "overview_exact": 1.5,
        },
        "core_scaling_model": predict_cores.__doc__.strip(),
        "rows": rows,
        # False while the run is going (the JSON is rewritten after every row) or if it stopped
        "complete": complete,
        "run_s": round(time.perf_counter() - t_start, 1),
        "machine": {
            "cpus": cpus,
            "allowed_cpus": allowed,
            "platform": platform.platform(),
            "python": platform.python_version(),
            **versions,
            "load_avg_start": [round(x, 2) for x in load_start],
            "load_avg_end": [round(x, 2) for x in load_end],
            "foreign_cpu_s": round(foreign, 1),
            "foreign_cpu_share": round(foreign_share, 3),
            "shared": foreign_share > SHARED_SHARE,
        },
    }


if __name__ == "__main__":
    sys.exit(main())
