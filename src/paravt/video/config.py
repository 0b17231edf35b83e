"""Config dataclasses of the video commands (``paravt probe``, ``paravt frames``)."""

from __future__ import annotations

from dataclasses import dataclass

from paravt.video.source import OVERVIEW_MODES


@dataclass
class ProbeConfig:
    device: str = "cpu"


@dataclass
class FramesConfig:
    """``paravt frames``: the overview (``k``, ``mode``) or crop_video windows (``fps`` ...)."""

    k: int = 16
    mode: str = "exact"
    fps: float = 1.0
    min_frames: int = 2
    max_frames: int = 16
    workers: int = 2
    skip_disposable: bool = True
    device: str = "cpu"
    thumb_width: int = 320
    columns: int = 0

    def __post_init__(self) -> None:
        if self.mode not in OVERVIEW_MODES:
            raise ValueError(f"mode must be one of {list(OVERVIEW_MODES)}, got {self.mode!r}")
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if self.workers < 1:
            raise ValueError(f"workers must be >= 1, got {self.workers}")
