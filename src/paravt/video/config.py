"""Config dataclasses of the video room: how ``crop_video`` windows are sampled and decoded
(``CropConfig``, the one definition that the tool, the episode engine and ``paravt frames`` all
use) and the video commands' own configs (``paravt probe``, ``paravt frames``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

__all__ = [
    "CropConfig",
    "FramesConfig",
    "OVERVIEW_MODES",
    "ProbeConfig",
    "WINDOW_MAX_PIXELS",
    "WINDOW_MIN_PIXELS",
]

#: How ``VideoSource.overview`` picks its frames (docs/PROTOCOL.md §2). Defined here, not in
#: ``video.source``, so that this module (which the engine's and the commands' configs extend, and
#: which ``paravt --help`` loads) needs neither torch nor torchcodec.
OverviewMode = Literal["exact", "keyframe", "qwen-vl-utils"]
OVERVIEW_MODES: tuple[str, ...] = get_args(OverviewMode)

#: The reference's pixel budget for a crop_video window frame (and, in training, an overview
#: frame) once resized for the model: 784 (28 x 28) to 50176 (28 x 28 x 64) pixels
#: (docs/PROTOCOL.md §2). The one definition: ``paravt.agent.config.CropSettings``, the training
#: engine's defaults and the resize kernels' defaults read it.
WINDOW_MIN_PIXELS = 784
WINDOW_MAX_PIXELS = 50176


@dataclass
class CropConfig:
    """How windows are sampled (docs/PROTOCOL.md §3) and how the batch is decoded.

    ``workers`` bounds the decoder pool (threads: torchcodec releases the GIL while decoding);
    0, the default, is one per CPU this process may run on (``video.parallel.resolve_workers``).
    ``decoder_threads`` is FFmpeg's own thread count per decoder (1 suits a pool).
    ``skip_disposable`` leaves H.264's and HEVC's non-reference pictures between the frames asked for out
    of the decode (same pixels, less work; ``paravt.video.disposable``).

    Defined here, in the lowest room that needs it, so that ``paravt.tools`` (which executes the
    windows), ``paravt.agent`` (whose ``CropSettings`` adds the window frames' pixel budget) and
    ``FramesConfig`` extend one definition instead of copying fields.
    """

    fps: float = 1.0
    min_frames: int = 2
    max_frames: int = 16
    workers: int = 0
    device: str = "cpu"
    decoder_threads: int = 1
    skip_disposable: bool = True


@dataclass
class ProbeConfig:
    device: str = "cpu"


@dataclass
class FramesConfig(CropConfig):
    """``paravt frames``: the overview (``k``, ``mode``) or crop_video windows (the ``CropConfig``
    keys it extends: ``fps``, ``max_frames``, ``workers``, ``skip_disposable`` ...)."""

    k: int = 16
    mode: str = "exact"
    thumb_width: int = 320
    columns: int = 0

    def __post_init__(self) -> None:
        if self.mode not in OVERVIEW_MODES:
            raise ValueError(f"mode must be one of {list(OVERVIEW_MODES)}, got {self.mode!r}")
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if self.workers < 0:
            raise ValueError(f"workers must be >= 0 (0 = one per core), got {self.workers}")
