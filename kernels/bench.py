"""``bench-kernels``: time ``pixel_values`` against the torch reference and transformers' processors.

Two workloads on the same 720p frames: a tool batch (5 windows x 16 frames, what one parallel
``crop_video`` turn decodes) and a 64-frame overview. Each is timed in the image layout (ParaVT's
route: frames as a list of images) and the video layout. Baselines run in the same process on
the same frames: transformers' torchvision-backed processors (image and video) and its PIL
processor (image only; there is no PIL video processor). On CUDA the Triton path is timed and
related to a device copy-bandwidth measurement taken in the same run: the floor is reading the
uint8 frames once and writing ``pixel_values`` once at copy speed.
"""

from __future__ import annotations

import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from paravt.errors import UserError
from paravt.kernels.api import default_resize, pixel_values
from paravt.kernels.parity import step_diff
from paravt.kernels.reference import reference_pixel_values
from paravt.kernels.spec import ARCHS, arch_spec
from paravt.video.config import WINDOW_MAX_PIXELS, WINDOW_MIN_PIXELS

__all__ = ["BenchKernelsConfig", "copy_bandwidth", "generated_frames", "run_bench"]


@dataclass
class BenchKernelsConfig:
    """Settings of one ``paravt bench-kernels`` run (recorded in its JSON)."""

    device: str = "cpu"
    arch: str = "qwen2.5-vl"
    min_pixels: int = WINDOW_MIN_PIXELS
    max_pixels: int = WINDOW_MAX_PIXELS
    height: int = 720
    width: int = 1280
    tool_windows: int = 5
    tool_frames: int = 16
    overview_frames: int = 64
    layouts: list[str] = field(default_factory=lambda: ["image", "video"])
    repeats: int = 3
    warmup: int = 1
    videos: list[str] = field(default_factory=list)  # decode real frames from these; else generate
    memory_format: str = "channels_last"  # how torchcodec decodes frames; or "contiguous" (NCHW)
    baselines: bool = True
    reference: bool = True
    parity: bool = True
    seed: int = 0


def generated_frames(n: int, height: int, width: int, seed: int = 0) -> torch.Tensor:
    """Deterministic uint8 frames with what stresses a resize: gradients, sharp edges, fine text."""
    g = torch.Generator().manual_seed(seed)
    yy = torch.linspace(0, 1, height).view(1, height, 1)
    xx = torch.linspace(0, 1, width).view(1, 1, width)
    frames = torch.empty(n, 3, height, width, dtype=torch.uint8)
    for i in range(n):
        phase = float(torch.rand(1, generator=g)) * 6.28
        base = torch.cat(
            [
                127 + 100 * torch.sin(6.28 * (xx * 3 + yy + phase)),
                127 + 100 * torch.cos(6.28 * (yy * 2 - xx + phase)),
                255 * xx * yy + 0 * phase,
            ]
        )
        img = base.expand(3, height, width).clone()
        for _ in range(12):  # hard-edged boxes: where one-pass and two-pass arithmetic disagree
            y0 = int(torch.randint(0, height - 8, (1,), generator=g))
            x0 = int(torch.randint(0, width - 8, (1,), generator=g))
            hh = int(torch.randint(4, height // 3, (1,), generator=g))
            ww = int(torch.randint(4, width // 3, (1,), generator=g))
            img[:, y0 : y0 + hh, x0 : x0 + ww] = torch.randint(0, 256, (3, 1, 1), generator=g)
        stripes = (torch.arange(width) // 2 % 2).view(1, 1, width) * 255.0  # 1-px-ish text strokes
        band = slice(height // 2, height // 2 + 40)
        img[:, band, :] = stripes.expand(3, 40, width)
        img += torch.randn(3, height, width, generator=g) * 6
        frames[i] = img.clamp(0, 255).round().to(torch.uint8)
    return frames


def decoded_frames(paths: list[str], n: int, height: int, width: int) -> tuple[torch.Tensor, list]:
    """Up to ``n`` real frames decoded with torchcodec, resized to height x width if needed."""
    from torchcodec.decoders import VideoDecoder
    from torchvision.transforms.v2 import functional as tvF

    got, used = [], []
    for path in paths:
        try:
            dec = VideoDecoder(path)
        except Exception as e:
            raise UserError(f"cannot decode {path}: {e}; pass readable videos in 'videos'") from e
        count = dec.metadata.num_frames or 0
        take = min(count, n - sum(f.shape[0] for f in got))
        if take <= 0:
            break
        batch = dec.get_frames_at(list(range(take))).data
        if tuple(batch.shape[-2:]) != (height, width):
            batch = tvF.resize(batch, [height, width], antialias=True)
        got.append(batch)
        used.append({"path": path, "frames": take, "size": list(batch.shape[-2:])})
    if not got:
        raise UserError("no frames decoded from 'videos'; pass at least one readable video")
    frames = torch.cat(got)
    reps = -(-n // frames.shape[0])
    return frames.repeat(reps, 1, 1, 1)[:n], used


def _timer(device: torch.device) -> Callable[[Callable[[], object]], float]:
    def run(fn: Callable[[], object]) -> float:
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - t0) * 1000.0

    return run


def time_interleaved(
    fns: dict[str, Callable[[], object]], cfg: BenchKernelsConfig, device: torch.device
) -> dict[str, dict[str, float]]:
    """Min and median ms of each callable, run round-robin so load changes hit all alike.

    The machine this runs on may be shared; the minimum is the estimate least disturbed by
    other processes, so ratios use it, and the median is kept alongside.
    """
    t = _timer(device)
    for fn in fns.values():
        for _ in range(cfg.warmup):
            t(fn)
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(cfg.repeats):
        for k, fn in fns.items():
            samples[k].append(t(fn))
    return {
        k: {"min": round(min(v), 3), "median": round(statistics.median(v), 3)}
        for k, v in samples.items()
    }


def _hf_processors(arch: str, cfg: BenchKernelsConfig, frames_per_video: int):
    """transformers' processors configured to the same budget as ``pixel_values``."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import (
        Qwen2VLImageProcessorPil,
    )
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor
    from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor

    spec = arch_spec(arch)
    size = {"shortest_edge": cfg.min_pixels, "longest_edge": cfg.max_pixels}
    common = {
        "patch_size": spec.patch_size,
        "image_mean": list(spec.mean),
        "image_std": list(spec.std),
    }
    fast = Qwen2VLImageProcessor(size=size, **common)
    pil = Qwen2VLImageProcessorPil(size=size, **common)
    if arch == "qwen3-vl":
        # Qwen3-VL's video processor budgets the whole clip; scale by the frame count so it
        # applies the same per-frame budget (exact for even counts and over-budget frames).
        vsize = {k: v * frames_per_video for k, v in size.items()}
        video = Qwen3VLVideoProcessor(size=vsize)
    else:
        video = Qwen2VLVideoProcessor(size=size)
    return fast, pil, video


def run_hf(processor, windows: list[torch.Tensor], layout: str, device: torch.device):
    """(pixel_values, grid_thw) from a transformers processor for the given windows."""
    kw = {"return_tensors": "pt"}
    if device.type == "cuda":
        kw["device"] = str(device)
    if layout == "video":
        out = processor(
            videos=list(windows), do_sample_frames=False, cap_pixels_per_frame=False, **kw
        )
        return out["pixel_values_videos"], out["video_grid_thw"]
    images = [f for w in windows for f in w]
    if type(processor).__name__.endswith("Pil"):
        kw.pop("device", None)
        images = [f.cpu().permute(1, 2, 0).numpy() for f in images]
    out = processor(images=images, **kw)
    return out["pixel_values"], out["image_grid_thw"]


def copy_bandwidth(device: torch.device, nbytes: int = 1 << 30) -> float:
    """Device-to-device copy bandwidth in bytes/s (read + write counted)."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    t = _timer(device)
    t(lambda: dst.copy_(src))
    ms = statistics.median(t(lambda: dst.copy_(src)) for _ in range(10))
    return 2 * nbytes / (ms / 1000.0)


def _workload(
    name: str,
    windows: list[torch.Tensor],
    layout: str,
    cfg: BenchKernelsConfig,
    device: torch.device,
    copy_bw: float | None,
) -> dict:
    arch = cfg.arch
    mode = default_resize(device)
    kw = {
        "arch": arch,
        "min_pixels": cfg.min_pixels,
        "max_pixels": cfg.max_pixels,
        "layout": layout,
    }
    pv, grid = pixel_values(windows, resize=mode, **kw)
    row: dict = {
        "name": name,
        "layout": layout,
        "windows": len(windows),
        "frames": sum(w.shape[0] for w in windows),
        "source_size": list(windows[0].shape[-2:]),
        "pixel_values_shape": list(pv.shape),
        "grid_thw_first": grid[0].tolist(),
        "paravt_resize": mode,
        "ms": {},
    }
    fns: dict[str, Callable[[], object]] = {
        "paravt": lambda: pixel_values(windows, resize=mode, **kw)
    }
    other = "uint8" if mode == "float" else "float"
    fns[f"paravt_{other}"] = lambda: pixel_values(windows, resize=other, **kw)
    if cfg.reference:
        fns["reference_float"] = lambda: reference_pixel_values(windows, resize="float", **kw)
    if cfg.baselines:
        fast, pil, video = _hf_processors(arch, cfg, windows[0].shape[0])
        if layout == "image":
            fns["hf_torchvision"] = lambda: run_hf(fast, windows, layout, device)
            fns["hf_pil"] = lambda: run_hf(pil, windows, layout, torch.device("cpu"))
        else:
            fns["hf_torchvision"] = lambda: run_hf(video, windows, layout, device)
    stats = time_interleaved(fns, cfg, device)
    ms = {k: v["min"] for k, v in stats.items()}
    row["ms"] = ms
    row["ms_median"] = {k: v["median"] for k, v in stats.items()}
    row["speedup"] = {
        f"{k}_over_paravt": round(ms[k] / ms["paravt"], 3)
        for k in ("hf_torchvision", "hf_pil", "reference_float")
        if k in ms
    }
    if copy_bw:
        moved = sum(w.numel() for w in windows) + pv.numel() * pv.element_size()
        achieved = moved / (ms["paravt"] / 1000.0)
        row["bytes"] = {
            "min_bytes_moved": moved,
            "achieved_bytes_per_s": achieved,
            "copy_bandwidth_bytes_per_s": copy_bw,
            "fraction_of_copy_bandwidth": achieved / copy_bw,
            "floor_us_at_copy_bandwidth": moved / copy_bw * 1e6,
        }
    return row


def parity_report(frames: torch.Tensor, cfg: BenchKernelsConfig, device: torch.device) -> dict:
    """uint8-step differences between each resize mode, its reference, and the other ecosystem.

    The transformers comparisons run on CPU (where its processors use the two-pass arithmetic);
    on CUDA, the ``float`` mode is the Triton kernel and is also compared with transformers'
    torchvision processor running on the GPU (one-pass float there).
    """
    cpu = torch.device("cpu")
    host = frames.to(cpu)
    out = {}
    for arch in ARCHS:
        fast, pil, video = _hf_processors(arch, cfg, frames.shape[0])
        kw = {"arch": arch, "min_pixels": cfg.min_pixels, "max_pixels": cfg.max_pixels}
        hf_fast, hf_grid = run_hf(fast, [host], "image", cpu)
        hf_pil, _ = run_hf(pil, [host], "image", cpu)
        hf_video, hf_vgrid = run_hf(video, [host], "video", cpu)
        ours_u8, grid = pixel_values(host, layout="image", resize="uint8", **kw)
        ours_vid, vgrid = pixel_values(host, layout="video", resize="uint8", **kw)
        ours_f, _ = pixel_values(frames, layout="image", resize="float", **kw)
        ref_f, _ = reference_pixel_values(host, layout="image", resize="float", **kw)
        row = {
            "grid_thw_equal_image": bool(torch.equal(grid, hf_grid.to(torch.long))),
            "grid_thw_equal_video": bool(torch.equal(vgrid, hf_vgrid.to(torch.long))),
            "uint8_vs_hf_torchvision_image": step_diff(ours_u8, hf_fast, arch).as_dict(),
            "uint8_vs_hf_torchvision_video": step_diff(ours_vid, hf_video, arch).as_dict(),
            "uint8_vs_hf_pil_image": step_diff(ours_u8, hf_pil, arch).as_dict(),
            "float_vs_reference_float": step_diff(ours_f, ref_f, arch).as_dict(),
            "float_vs_hf_torchvision_ecosystem_gap": step_diff(ours_f, hf_fast, arch).as_dict(),
        }
        if device.type == "cuda":
            hf_gpu, _ = run_hf(fast, [frames], "image", device)
            row["float_vs_hf_torchvision_cuda"] = step_diff(ours_f, hf_gpu, arch).as_dict()
        out[arch] = row
    return out


def run_bench(cfg: BenchKernelsConfig, progress: Callable[[str], None] = lambda s: None) -> dict:
    """Run every workload of ``cfg`` and return the JSON-able report."""
    if cfg.device not in ("cpu", "cuda"):
        raise UserError(f"device={cfg.device!r}: use cpu or cuda")
    if cfg.device == "cuda" and not torch.cuda.is_available():
        raise UserError("device=cuda but no CUDA device is visible; run with --device cpu")
    if cfg.arch not in ARCHS:
        raise UserError(f"arch={cfg.arch!r}: use one of {sorted(ARCHS)}")
    bad = [x for x in cfg.layouts if x not in ("image", "video")]
    if bad:
        raise UserError(f"layouts {bad}: use image and/or video")
    if cfg.memory_format not in ("channels_last", "contiguous"):
        raise UserError("memory_format must be channels_last or contiguous")
    if cfg.repeats < 1:
        raise UserError("repeats must be >= 1")
    device = torch.device(cfg.device)
    warnings.filterwarnings("ignore", category=FutureWarning)
    import transformers

    transformers.logging.set_verbosity_error()
    need = max(cfg.tool_windows * cfg.tool_frames, cfg.overview_frames)
    progress(f"preparing {need} frames of {cfg.height}x{cfg.width}")
    if cfg.videos:
        frames, source = decoded_frames(cfg.videos, need, cfg.height, cfg.width)
    else:
        frames = generated_frames(need, cfg.height, cfg.width, cfg.seed)
        source = "generated"
    fmt = torch.channels_last if cfg.memory_format == "channels_last" else torch.contiguous_format
    frames = frames.to(device).contiguous(memory_format=fmt)
    copy_bw = copy_bandwidth(device) if device.type == "cuda" else None

    # Slices keep the memory format (each window is a view, as a decoder batch would be).
    tool = [
        frames[i * cfg.tool_frames : (i + 1) * cfg.tool_frames] for i in range(cfg.tool_windows)
    ]
    overview = [frames[: cfg.overview_frames]]
    rows = []
    for name, windows in (("tool_batch", tool), ("overview", overview)):
        for layout in cfg.layouts:
            progress(f"timing {name} ({layout} layout)")
            rows.append(_workload(name, windows, layout, cfg, device, copy_bw))
    report = {
        "device": str(device),
        "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch_threads": torch.get_num_threads(),
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "torchvision": __import__("torchvision").__version__,
        },
        "frames_source": source,
        "frames_memory_format": cfg.memory_format,
        "workloads": rows,
    }
    if copy_bw:
        report["copy_bandwidth_bytes_per_s"] = copy_bw
    if cfg.parity:
        progress("parity against transformers' processors")
        report["parity"] = parity_report(overview[0], cfg, device)
    return report
