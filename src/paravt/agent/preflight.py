"""What ``infer`` and ``eval`` check before a model loads: each video opens, and the prompt an
episode builds fits the model's context.

Why: a corrupt video was found only after the model had loaded, and its error then reached the
user three times; ``--frames 100000`` was accepted in silence and built a 164,817-token prompt
(6.5 GB) on a model whose context is 32,768, with the warning only in the JSON record.

The prompt is counted from what sets its length: the overview frames (``engine.frames``, no more
than the video has), their size under the overview pixel budget and the model's size rule
(``paravt.kernels.spec``), the window frames of each tool round (``max_parallel`` calls of at
most ``crop.max_frames`` frames under the window pixel budget), and the new tokens of each turn.
The count is a lower bound (image tokens and their two markers; the text is not counted), so a
refusal is certain: ``first_turn`` past the context is refused with the numbers, and a first turn
past ``NEAR`` of it, or a full episode past it, is a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from paravt.agent.config import EngineConfig
from paravt.errors import UserError
from paravt.kernels.spec import tokens_per_frame

__all__ = ["VideoChecks", "check_budget"]

#: tokens each image costs besides its pads: ``<|vision_start|>`` and ``<|vision_end|>``
IMAGE_MARKERS = 2
#: a first turn past this share of the context is a warning on stderr
NEAR = 0.8


@dataclass(frozen=True)
class VideoFacts:
    """What the budget needs of a video, read by opening it (a packet scan, no decoding)."""

    path: str
    width: int
    height: int
    num_frames: int
    duration: float


def probe_video(path: str) -> VideoFacts:
    """Open ``path`` as the engine will (``VideoSource``); a file that cannot be used raises the
    video room's typed error, one line that names the file and the fix."""
    from paravt.video import VideoSource  # loads torch and torchcodec

    with VideoSource(path) as src:
        m = src.meta
        return VideoFacts(src.path, m.width, m.height, m.num_frames, m.duration)


class VideoChecks:
    """Each video opened once (``check``), its facts kept; the error of one that cannot be used
    is kept too, so a second question about it fails the same way without a second open."""

    def __init__(self):
        self._seen: dict[str, VideoFacts | UserError] = {}

    def check(self, path: str) -> VideoFacts:
        key = str(path)
        if key not in self._seen:
            try:
                self._seen[key] = probe_video(key)
            except UserError as e:  # the video room's errors: bad input, one line
                self._seen[key] = e
        found = self._seen[key]
        if isinstance(found, UserError):
            raise found
        return found


@dataclass(frozen=True)
class PromptBudget:
    """The tokens an episode of one video needs at least (see the module docstring)."""

    video: str
    context: int
    overview_frames: int
    overview_tokens_per_frame: int
    first_turn: int
    window_tokens_per_round: int
    rounds: int
    episode: int

    @property
    def overview(self) -> int:
        return self.overview_frames * self.overview_tokens_per_frame


def _frame_tokens(facts: VideoFacts, arch: str, min_pixels: int, max_pixels: int) -> int:
    pads = tokens_per_frame(facts.height, facts.width, arch, min_pixels, max_pixels)
    return int(pads) + IMAGE_MARKERS


def prompt_budget(
    engine: EngineConfig, facts: VideoFacts, k: int, arch: str, context: int
) -> PromptBudget:
    """The lower bound of one episode's tokens over ``facts`` with ``k`` overview frames."""
    frames = max(1, min(int(k), facts.num_frames))  # the overview never repeats a frame
    per_frame = _frame_tokens(facts, arch, engine.min_pixels, engine.max_pixels)
    first_turn = frames * per_frame + engine.max_new_tokens
    rounds = 0 if engine.mode == "direct" else engine.max_turns
    calls = 1 if engine.mode == "sequential" else engine.max_parallel
    if engine.evidence == "subagent":
        per_call = engine.subagent_max_tokens
    else:
        window = _frame_tokens(facts, arch, engine.crop.min_pixels, engine.crop.max_pixels)
        per_call = engine.crop.max_frames * window
    per_round = calls * per_call
    episode = first_turn + rounds * (per_round + engine.max_new_tokens)
    return PromptBudget(
        facts.path, context, frames, per_frame, first_turn, per_round, rounds, episode
    )


def _refusal(b: PromptBudget, engine: EngineConfig, frames_flag: str) -> str:
    room = b.context - (b.first_turn - b.overview)
    most = max(0, room // b.overview_tokens_per_frame)
    return (
        f"{frames_flag} {engine.frames}: the first turn over {b.video} needs at least "
        f"{b.first_turn:,} tokens ({b.overview_frames:,} overview frames x "
        f"{b.overview_tokens_per_frame:,} tokens under engine.max_pixels={engine.max_pixels:,}, "
        f"+ {engine.max_new_tokens:,} new tokens), past the model's context of {b.context:,}; "
        f"lower {frames_flag} to at most {most:,}, or engine.max_pixels or engine.max_new_tokens"
    )


def check_budget(
    engine: EngineConfig,
    facts: VideoFacts,
    k: int,
    arch: str | None,
    context: int | None,
    frames_flag: str = "--frames",
) -> list[str]:
    """Refuse (``UserError``) an episode whose first turn cannot fit the context; return the
    warnings of one that comes near it, or whose full episode may not fit. Nothing is checked
    when the model's size rule or context is unknown (``arch`` or ``context`` None)."""
    if arch is None or context is None:
        return []
    b = prompt_budget(engine, facts, k, arch, context)
    if b.first_turn > b.context:
        raise UserError(_refusal(b, engine, frames_flag))
    warnings = []
    if b.first_turn > NEAR * b.context:
        warnings.append(
            f"the first turn over {Path(b.video).name} needs at least {b.first_turn:,} tokens, "
            f"{b.first_turn / b.context:.0%} of the model's context of {b.context:,} "
            f"({b.overview_frames:,} overview frames x {b.overview_tokens_per_frame:,} tokens "
            f"+ {engine.max_new_tokens:,} new tokens): little is left for the tool rounds; "
            f"lower {frames_flag} or engine.max_pixels"
        )
    elif b.episode > b.context:
        warnings.append(
            f"a full episode over {Path(b.video).name} may need {b.episode:,} tokens, past the "
            f"model's context of {b.context:,} (first turn {b.first_turn:,} + {b.rounds} tool "
            f"rounds x ({b.window_tokens_per_round:,} window tokens + {engine.max_new_tokens:,} "
            "new tokens)); later rounds may not fit: lower engine.max_turns, engine.max_parallel, "
            "engine.crop.max_frames or engine.crop.max_pixels"
        )
    return warnings
