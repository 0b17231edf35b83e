"""The records the crop_video tool takes and gives back (see docs/INTERFACES.md).

``CropConfig`` (how windows are sampled and decoded) lives in ``paravt.video.config`` and is
re-exported here and from ``paravt.tools``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from paravt.video.config import CropConfig  # re-exported: the tool's config, defined once there
from paravt.video.frames import Frames


@dataclass
class WindowRequest:
    """One crop_video call: the episode's video (the model's ``video_path`` is never opened)."""

    video: str
    arguments: dict
    key: Any = None


@dataclass
class ToolResult:
    """The outcome of one call: frames and their true times, or a typed error for the model.

    ``clip`` holds the window's frames as decoded (``paravt.video.Frames``; None for a failed
    call); ``frames`` stacks them into one tensor on first use. The engine reads
    ``clip.frame(i)``, so a tool round never copies its frames into stacks nobody needs.
    """

    ok: bool
    clip: Frames | None
    times: list[float]
    start: float | None  # the clamped window; None when the call failed before it was known
    end: float | None
    error: str | None = None
    error_kind: str | None = None
    warnings: list[str] = field(default_factory=list)
    failed: list[float] = field(default_factory=list)
    #: times of returned frames decoded after damage in the file (``Frames.damaged``)
    damaged: list[float] = field(default_factory=list)
    key: Any = None
    video: str | None = None

    @property
    def frames(self) -> torch.Tensor | None:
        """The window's frames, uint8 ``[n, 3, H, W]`` (a stacked copy, made once), or None."""
        return None if self.clip is None else self.clip.data

    def message(self) -> str:
        """What the model reads in the tool response."""
        if not self.ok:
            return self.error or "crop_video failed"
        text = f"{len(self.times)} frames from {self.start:.1f}s to {self.end:.1f}s."
        if self.failed:
            text += f" {len(self.failed)} frames in this window could not be decoded."
        if self.damaged:
            text += (
                f" {len(self.damaged)} frames come from a damaged part of the file and may show "
                "decoding errors."
            )
        return text


@dataclass
class BatchStats:
    """Work done by one ``execute_windows`` batch (what the episode engine logs and asserts on).

    ``opens[path]`` counts VideoSource opens (metadata + frame table read): 1 per video per
    batch unless the caller passed the source in (0). ``decoders[path]`` counts torchcodec
    decoders of the file used on it (at most ``workers``: parallel GOP ranges of one video need
    one each); lanes decoded from filtered packets (``paravt.video.disposable``) use none of them.
    """

    opens: dict[str, int] = field(default_factory=dict)
    decoders: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    calls_ok: int = 0
    frames_returned: int = 0
    distinct_frames: int = 0
    frames_decoded: int = 0
    frames_failed: int = 0
    gop_frames: int = 0
    pictures_skipped: int = 0  # disposable H.264 pictures left out of the decode
    lane_gop_frames: list[int] = field(default_factory=list)
    lanes: int = 0
    workers: int = 1
    seconds: float = 0.0
    #: crop.device cuda: videos torchcodec decoded on the CPU instead of NVDEC (each said in
    #: its calls' warnings, ``paravt.video.nvdec.cpu_fallback_line``)
    cpu_fallbacks: int = 0

    def __getitem__(self, name: str) -> Any:
        return getattr(self, name)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class BatchResult:
    results: list[ToolResult]
    stats: BatchStats


__all__ = ["BatchResult", "BatchStats", "CropConfig", "ToolResult", "WindowRequest"]
