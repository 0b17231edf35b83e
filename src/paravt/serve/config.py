"""``ServeToolsConfig``: every knob of ``paravt serve-tools``, recorded in the launcher file."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from paravt.agent.config import CropSettings
from paravt.config import check_choices
from paravt.errors import ConfigError
from paravt.video.nvdec import check_crop_device

__all__ = ["ServeToolsConfig"]


@dataclass
class ServeToolsConfig:
    """How the served tools run.

    - ``video_roots``: the folders a ``video_path`` may name a file in (a relative path is looked
      up under each, in order); nothing outside them is ever opened.
    - ``arch``: the size rule of the model the frames are for (``qwen3-vl``: sides multiples of
      32, ``qwen2.5-vl``: of 28); with ``crop.min_pixels``/``crop.max_pixels`` it is the engine's
      pixel budget for window frames.
    - ``crop``: the engine's window settings (``paravt.agent.config.CropSettings``): frames per
      second of window, at least ``min_frames`` and at most ``max_frames`` a call (the per-call
      frame limit: a ``max_frames`` argument above it is refused), decoder pool, pixel budget.
    - ``max_bytes_per_call``: the encoded (PNG) frames of one call may not exceed this.
    - ``timeout_s``: a call that has not finished by then (waiting for its turn included) is
      answered with a tool error.
    - ``max_concurrent``: calls decoded at once; the others wait their turn.
    - ``torch_threads``: torch's intra-op threads in the server process (a harness's stdio client
      passes no ``OMP_NUM_THREADS``).
    - ``http_port``: 0 serves MCP over stdio; a port serves streamable HTTP on 127.0.0.1 instead.
    """

    video_roots: list[str] = field(default_factory=list)
    arch: Literal["qwen3-vl", "qwen2.5-vl"] = "qwen3-vl"
    crop: CropSettings = field(default_factory=CropSettings)
    max_bytes_per_call: int = 16_000_000
    timeout_s: float = 60.0
    max_concurrent: int = 2
    torch_threads: int = 1
    http_port: int = 0

    def __post_init__(self) -> None:
        check_choices(self)  # arch (Literal)
        for name in ("max_bytes_per_call", "max_concurrent", "torch_threads"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if not self.timeout_s > 0:
            raise ConfigError(f"timeout_s must be positive, got {self.timeout_s}")
        if not 0 <= self.http_port < 65536:
            raise ConfigError(f"http_port {self.http_port}: choose 0 (stdio) or a TCP port")
        if self.crop.min_frames < 1 or self.crop.max_frames < self.crop.min_frames:
            raise ConfigError(
                f"crop.min_frames={self.crop.min_frames} and crop.max_frames="
                f"{self.crop.max_frames}: need 1 <= min_frames <= max_frames"
            )
        check_crop_device(self.crop.device)  # cuda: NVDEC; refused without a CUDA device
