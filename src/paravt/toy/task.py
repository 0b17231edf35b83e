"""The toy long-video task: its fixed constants, its config, and the seed → video spec rule.

Why this task: a coloured square is on screen for ``needle_seconds`` somewhere in a 2–3 minute
video. With K overview frames a time-uniform sample lands on it with probability about
``K · needle_seconds / duration`` (well under 10% at K = 4), so a model that only looks at the
overview is near chance, while one parallel sweep of ``sweep_windows`` ``crop_video`` calls that
tile the video always returns a frame on it (``needle_seconds`` is longer than the frame spacing
of a tiling window, PROTOCOL §3). A few fixed durations make the tiling windows a pattern to
learn, not arithmetic. Everything here is pure: no pixels, no files.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Literal, get_args

import numpy as np

from paravt.config import check_choices
from paravt.errors import ConfigError
from paravt.schema.questions import LETTERS
from paravt.tools.results import CropConfig
from paravt.video.sampling import window_frame_count

__all__ = ["PALETTE", "ToyTaskConfig"]

#: Bumped whenever the same (seed, split, index) would give different pixels or questions.
GENERATOR_VERSION = "toy-needle-1"

#: The needle colours (saturated; the background is grey, so it never shows any of them).
PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (220, 30, 30),
    "yellow": (225, 215, 20),
    "green": (30, 190, 40),
    "cyan": (20, 200, 215),
    "blue": (35, 55, 225),
    "magenta": (215, 35, 210),
}

MCQ_QUESTION = "What colour was the square that appeared briefly?"
TVG_QUESTION = "When does the coloured square appear?"
ToySplit = Literal["train", "eval"]
TOY_SPLITS: tuple[str, ...] = get_args(ToySplit)
TOY_QUESTION_TYPES = ("mcq", "tvg")


@dataclass
class ToyTaskConfig:
    """``paravt make-toy-task``: how many videos, which seed and split, and the task's shape.

    The defaults are the task as documented in docs/TOY_TASK.md; changing ``durations``,
    ``needle_seconds`` or ``sweep_windows`` is checked against the sweep property below.
    """

    out: str = ""
    n: int = 100
    seed: int = 0
    split: ToySplit = "train"
    #: the few fixed video lengths, seconds
    durations: list[int] = field(default_factory=lambda: [120, 150, 180])
    fps: int = 2
    #: frame side in pixels (square frames; 64 → 4 vision tokens per frame on Qwen3-VL)
    size: int = 64
    needle_seconds: float = 3.0
    keyframe_seconds: float = 4.0
    #: windows of the parallel sweep that tiles a video (≤ max_parallel = 5)
    sweep_windows: int = 5
    question_types: list[str] = field(default_factory=lambda: ["mcq", "tvg"])
    #: overview budgets K whose needle visibility is measured and recorded in task.json
    visibility_ks: list[int] = field(default_factory=lambda: [4, 8, 16, 32, 64])
    #: how many of the generated videos the visibility measurement decodes (0 = skip it)
    visibility_videos: int = 100
    crf: int = 23

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        if isinstance(self.n, bool) or int(self.n) < 1:
            raise ConfigError(f"n={self.n}: the number of videos must be at least 1 (e.g. --n 100)")
        check_choices(self)  # split (Literal)
        bad = [q for q in self.question_types if q not in TOY_QUESTION_TYPES]
        if bad or not self.question_types:
            raise ConfigError(
                f"question_types={self.question_types}: choose from {', '.join(TOY_QUESTION_TYPES)}"
            )
        if not self.durations or min(self.durations) < 10:
            raise ConfigError(f"durations={self.durations}: give video lengths of at least 10 s")
        if self.fps < 1 or self.size < 32 or self.size % 16:
            raise ConfigError(
                f"fps={self.fps}, size={self.size}: fps must be ≥ 1 and size a multiple of 16 ≥ 32"
            )
        if self.needle_frames < 1:
            raise ConfigError(f"needle_seconds={self.needle_seconds} is shorter than one frame")
        spacing = max(sweep_spacing(d, self.sweep_windows) for d in self.durations)
        if not self.needle_frames / self.fps > spacing:
            raise ConfigError(
                f"needle_seconds={self.needle_seconds} must exceed the frame spacing "
                f"{spacing:.3f} s of a {self.sweep_windows}-window sweep of the longest video "
                f"(raise needle_seconds or sweep_windows, or shorten durations)"
            )

    @property
    def needle_frames(self) -> int:
        return round(self.needle_seconds * self.fps)


def tiling_windows(duration: float, n: int) -> list[tuple[float, float]]:
    """``n`` equal windows that cover ``[0, duration]`` end to end (the parallel sweep)."""
    step = float(duration) / n
    return [(round(i * step, 3), round((i + 1) * step, 3)) for i in range(n)]


def sweep_spacing(duration: float, n: int) -> float:
    """Seconds between the frames the tool returns for one window of an ``n``-window sweep
    (the tool's own window rule and defaults, PROTOCOL §3)."""
    crop = CropConfig()
    length = float(duration) / n
    return length / window_frame_count(length, crop.fps, crop.min_frames, crop.max_frames)


def expected_visibility(k: int, needle_seconds: float, duration: float) -> float:
    """Chance that one of ``k`` time-uniform frames lands on a needle at a uniform time."""
    return min(1.0, k * needle_seconds / duration)


@dataclass
class VideoSpec:
    """Everything that decides one video's pixels and its questions."""

    index: int
    name: str  # file stem, e.g. train-00007
    duration: int
    fps: int
    size: int
    colour: str
    start_frame: int
    needle_frames: int
    x: int
    y: int
    square: int
    background_seed: int

    @property
    def span(self) -> list[float]:
        """Gold ``[start, end]`` seconds: from the first needle frame to the end of the last."""
        return [self.start_frame / self.fps, (self.start_frame + self.needle_frames) / self.fps]

    @property
    def num_frames(self) -> int:
        return self.duration * self.fps


def _rng(seed: int, split: str, index: int, purpose: str) -> np.random.Generator:
    """A generator for one (seed, split, video, purpose): stable across runs and platforms."""
    key = [
        int(seed) & 0xFFFFFFFF,
        zlib.crc32(split.encode()),
        int(index),
        zlib.crc32(purpose.encode()),
    ]
    return np.random.default_rng(np.random.SeedSequence(key))


def video_spec(cfg: ToyTaskConfig, index: int) -> VideoSpec:
    """The spec of video ``index`` of ``cfg.split`` under ``cfg.seed`` (deterministic)."""
    rng = _rng(cfg.seed, cfg.split, index, "spec")
    duration = int(cfg.durations[int(rng.integers(len(cfg.durations)))])
    colour = list(PALETTE)[int(rng.integers(len(PALETTE)))]
    m = cfg.needle_frames
    start = int(rng.integers(0, duration * cfg.fps - m + 1))
    square = cfg.size // 4
    hi = (cfg.size - square - 2) // 2
    x, y = (2 * int(v) for v in rng.integers(1, hi + 1, size=2))
    return VideoSpec(
        index=index,
        name=f"{cfg.split}-{index:05d}",
        duration=duration,
        fps=cfg.fps,
        size=cfg.size,
        colour=colour,
        start_frame=start,
        needle_frames=m,
        x=x,
        y=y,
        square=square,
        background_seed=int(rng.integers(2**31)),
    )


def question_rows(cfg: ToyTaskConfig, spec: VideoSpec, video: str) -> list[dict]:
    """The JSON-lines rows (``paravt train`` / ``eval --benchmark jsonl``) of one video."""
    rows = []
    meta = {"duration": spec.duration, "colour": spec.colour, "span": spec.span}
    group = f"{spec.duration}s"
    for qtype in cfg.question_types:
        row: dict[str, object] = {"id": f"{spec.name}-{qtype}", "video": video}
        row["question_type"] = qtype
        if qtype == "mcq":
            rng = _rng(cfg.seed, cfg.split, spec.index, "options")
            others = [c for c in PALETTE if c != spec.colour]
            picks = [others[i] for i in rng.choice(len(others), size=3, replace=False)]
            options = picks + [spec.colour]
            options = [options[i] for i in rng.permutation(len(options))]
            row.update(
                question=MCQ_QUESTION, options=options, answer=LETTERS[options.index(spec.colour)]
            )
        else:
            row.update(question=TVG_QUESTION, options=None, answer=spec.span)
        row.update(duration_group=group, task_type=f"toy_{qtype}", meta=meta)
        rows.append(row)
    return rows


def infer_duration(overview_times: list[float], durations: list[int] | tuple[int, ...]) -> float:
    """The video length from time-uniform overview times (slice centres): first + last ≈ length,
    snapped to the nearest of the task's fixed ``durations``."""
    if not overview_times:
        return float(max(durations))
    estimate = min(overview_times) + max(overview_times)
    return float(min(durations, key=lambda d: (abs(d - estimate), d)))
