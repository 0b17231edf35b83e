"""Decoding on the GPU (NVDEC) for ``crop.device: cuda``: the setting's check, the decoder pool's
size, torchcodec's CPU-fallback status read and said, and host frames' way onto the device.

Why a module of its own: the CPU decode path (``decode``, ``decoders``, ``parallel``) stays as it
is, pixel for pixel; what differs on a GPU is gathered here, in public torchcodec names only
(``torchcodec.decoders.VideoDecoder``, its ``cpu_fallback`` status, ``set_nvdec_cache_capacity``;
``Demuxer``/``ColorConverter`` are public in ``torchcodec.decoders`` since 0.17).

**The pool.** One NVDEC decoder per GPU stream, ``NVDEC_POOL_SIZE`` (2) of them per process: one
window decodes while the previous window's frames are in the resize kernel. On the CPU a batch
uses one decoder per core (``workers: 0``); on a GPU that would open as many NVDEC sessions,
each holding its own surfaces in GPU memory (tens of MB at 720p), while a GPU has a handful of
NVDEC engines (7 on an H100) that more sessions only time-slice. ``decode_workers`` is the batch's
lane count on a CUDA device: ``min(workers, NVDEC_POOL_SIZE)`` (``workers: 0`` is the pool). The
engine's batches decode through the video room's lanes (``paravt.video.parallel``) so capped, on
torchcodec's stream; ``NvdecPool`` is the same pool with a CUDA stream a slot, for callers that
decode frames of whole files (``benchmarks/gpu_check.py``).

**No hidden sync.** Nothing here reads a device value; frames that must cross from the host (a
CPU fallback) go through pinned memory with ``non_blocking=True``. The image grids are computed
on the host from the frames' sizes (``paravt.agent.vision``).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from paravt.errors import ConfigError

__all__ = [
    "NVDEC_POOL_SIZE",
    "NvdecPool",
    "check_crop_device",
    "cpu_fallback_line",
    "decode_workers",
    "is_cuda",
    "to_device",
]

#: NVDEC decoders (and CUDA streams) per process; see the module docstring.
NVDEC_POOL_SIZE = 2


def is_cuda(device: str) -> bool:
    """``cuda`` or ``cuda:N``."""
    return device == "cuda" or device.startswith("cuda:")


def check_crop_device(device: str, setting: str = "crop.device") -> None:
    """Refuse, in one line naming ``setting``, a device this process cannot decode on.

    Called by the configs' checks, so a run without a CUDA device stops before any model loads.
    torch is imported only for a CUDA device (the configs stay light for ``--help``)."""
    if device == "cpu":
        return
    if not is_cuda(device):
        raise ConfigError(f"{setting}={device!r}: choose cpu, cuda or cuda:N")
    import torch

    if not torch.cuda.is_available():
        raise ConfigError(
            f"{setting}={device!r}: no CUDA device is visible to this process "
            "(torch.cuda.is_available() is False); set crop.device: cpu"
        )
    index = device.partition(":")[2]
    if index and (not index.isdigit() or int(index) >= torch.cuda.device_count()):
        raise ConfigError(
            f"{setting}={device!r}: this process sees {torch.cuda.device_count()} CUDA "
            "device(s); choose cuda or cuda:0 .. cuda:N-1"
        )


def decode_workers(device: str, workers: int) -> int:
    """Decode lanes for a batch: ``resolve_workers(workers)`` on the CPU; on a CUDA device at most
    ``NVDEC_POOL_SIZE`` (``workers: 0``, "auto", is the pool)."""
    from paravt.video.parallel import resolve_workers

    if not is_cuda(device):
        return resolve_workers(workers)
    return NVDEC_POOL_SIZE if workers == 0 else max(1, min(int(workers), NVDEC_POOL_SIZE))


def cpu_fallback_line(decoder: Any, path: str) -> str | None:
    """A warning line when torchcodec decoded ``path`` on the CPU although asked for CUDA, read
    from the public ``VideoDecoder.cpu_fallback`` status; ``None`` when it did not (or the
    decoder is a CPU one: its status is never a fallback)."""
    status = getattr(decoder, "cpu_fallback", None)
    if status is None or not bool(status):
        return None
    return f"{path}: decoded on the CPU, not NVDEC ({status}); frames copied to the GPU"


def to_device(frames: Any, device: str) -> Any:
    """Host frames onto ``device`` through pinned memory, without waiting for the copy (the
    stream orders it before the kernel that reads them)."""
    if frames.device.type != "cpu" or not is_cuda(device):
        return frames if frames.device.type != "cpu" else frames.to(device)
    return frames.pin_memory().to(device, non_blocking=True)


@dataclass
class DeviceFrames:
    """One file's frames on the GPU and, where NVDEC did not decode them, why (``fallback``)."""

    data: Any
    fallback: str | None = None


class NvdecPool:
    """``size`` NVDEC decoders' worth of slots, each with its own CUDA stream; ``decode`` borrows
    one. A file NVDEC cannot take decodes on the CPU (counted in ``fallbacks``, said in the
    result), never a crash."""

    def __init__(self, device: str = "cuda", size: int = NVDEC_POOL_SIZE):
        import torch
        from torchcodec.decoders import set_nvdec_cache_capacity

        check_crop_device(device, "device")
        self.device = device
        self.size = size
        self._streams = [torch.cuda.Stream(device=device) for _ in range(size)]
        self._free = list(range(size))
        self._lock = threading.Condition()
        self.files = 0
        self.fallbacks: list[str] = []
        # torchcodec keeps idle NVDEC decoders for reuse; the cache holds the pool, no more
        set_nvdec_cache_capacity(size)

    @contextmanager
    def _slot(self):
        with self._lock:
            while not self._free:
                self._lock.wait()
            slot = self._free.pop()
        try:
            yield self._streams[slot]
        finally:
            with self._lock:
                self._free.append(slot)
                self._lock.notify()

    def decode(self, path: str, indices: list[int]) -> DeviceFrames:
        """Frames ``indices`` of ``path`` as uint8 ``[n, 3, H, W]`` on the pool's device; the
        caller's current stream waits for them (an event, not a host sync)."""
        import torch
        from torchcodec.decoders import VideoDecoder

        with self._slot() as stream:
            fallback = None
            with torch.cuda.stream(stream):
                try:
                    decoder = VideoDecoder(path, device=self.device, seek_mode="exact")
                    data = decoder.get_frames_at(indices).data
                    fallback = cpu_fallback_line(decoder, path)
                except RuntimeError as e:
                    host = VideoDecoder(path, device="cpu", seek_mode="exact")
                    data = to_device(host.get_frames_at(indices).data, self.device)
                    fallback = f"{path}: NVDEC could not decode it ({e}); decoded on the CPU"
            consumer = torch.cuda.current_stream(self.device)
            consumer.wait_stream(stream)
            data.record_stream(consumer)  # made on the slot's stream, read on the caller's
        with self._lock:
            self.files += 1
            if fallback is not None:
                self.fallbacks.append(fallback)
        return DeviceFrames(data, fallback)
