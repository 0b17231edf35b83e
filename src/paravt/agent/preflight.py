"""What ``infer`` and ``eval`` check before a model loads: each video opens, and the prompt an
episode builds fits the model's context.

Why: a corrupt video was found only after the model had loaded, and its error then reached the
user three times; ``--frames 100000`` was accepted in silence and built a 164,817-token prompt
(6.5 GB) on a model whose context is 32,768, with the warning only in the JSON record.

The prompt is counted from what sets its length: the overview frames (``engine.frames``, no more
than the video has), their size under the overview pixel budget and the model's size rule
(``paravt.kernels.spec``), the window frames of each tool round (``max_parallel`` calls of at
most ``crop.max_frames`` frames under the window pixel budget), and the new tokens of each turn.
The image tokens (and their two markers) are counted from the size rule. The text (system
prompt, tool schema, the question, a timestamp before each frame, the think prefix) is counted
too once the images alone pass ``NEAR`` of the context, with the model's own tokenizer and chat
template along the engine's prompt path (``PromptText``): the refusal's suggested ``--frames``
counted images only and did not fit (it said 289 for a 10 s clip on a 32,768-token model, whose
prompt at 289 frames was 33,024 tokens). A first turn past the context is refused with the
numbers and the largest ``--frames`` whose first turn fits, timestamps counted at their longest;
one past ``NEAR`` of it, or a full episode past it, is a warning. Without a tokenizer the count
is the images' alone, a lower bound.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paravt.agent.chat import ChatCodec
from paravt.agent.config import EngineConfig
from paravt.agent.prompts import load_prompts
from paravt.errors import UserError

__all__ = ["PromptText", "VideoChecks", "check_budget", "text_counters"]

#: the text tokens of a first turn whose overview frames are at these times
TextCount = Callable[[list[float]], int]

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
    # paravt.kernels loads torch as it is imported: the checks before this one (a missing
    # video, a mistyped --model) come back without it
    from paravt.kernels.spec import tokens_per_frame

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


class PromptText:
    """The text tokens of an episode's first turn, counted with the model's own tokenizer and
    chat template along the engine's prompt path (``EpisodeEngine``: the system prompt and tool
    schema of its mode, the question's text, a timestamp before each frame, the think prefix).
    An image counts its two markers in the image cost (``IMAGE_MARKERS``), its pads nothing
    here. ``counter(question)`` is the ``TextCount`` ``check_budget`` takes."""

    def __init__(self, processor: Any, engine: EngineConfig, arch: str | None = None):
        self.codec = ChatCodec(processor, arch)
        self.engine = engine
        self.prompts = load_prompts(engine.system_prompt, engine.user_template)
        self.system, self.tools = self.prompts.system_and_tools(
            engine.mode,
            engine.max_turns,
            engine.max_parallel,
            engine.resolved_tool_prompt(self.codec.arch),
            self.codec.renders_tools,
        )

    def tokens(self, times: list[float], question: Any) -> int:
        """Text tokens of the first turn over frames at ``times`` (``question``: an episode
        input's ``question``, ``options``, ``question_type`` and ``video``)."""
        content = self.prompts.user_content(
            times, question.question, question.options, question.question_type,
            self.engine.timestamps, video=question.video,
        )  # fmt: skip
        messages = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": content},
        ]
        no_pads = [(1, 0, 0)] * len(times)  # an image's pads are the size rule's to count
        ids = self.codec.prompt_ids(
            messages, no_pads, prefill=self.engine.think_prefix, tools=self.tools
        )
        return len(ids) - IMAGE_MARKERS * len(times)

    def counter(self, question: Any) -> TextCount:
        return lambda times: self.tokens(times, question)


def text_counters(model: str, engine: EngineConfig, arch: str) -> Callable[[Any], TextCount]:
    """``counter(question)``: the ``TextCount`` of a question's first turn under ``model``'s
    tokenizer and template; the processor loads at the first count (only a turn near the
    context is counted), once for every question."""
    made: list[PromptText] = []

    def count(times: list[float], question: Any) -> int:
        if not made:
            from transformers import AutoProcessor  # loads torch

            made.append(PromptText(AutoProcessor.from_pretrained(model), engine, arch))
        return made[0].tokens(times, question)

    return lambda question: lambda times: count(times, question)


def _spread(duration: float, k: int) -> list[float]:
    """``k`` frame times spread over ``duration`` (their timestamps' text, as the engine's)."""
    return [duration * (i + 0.5) / k for i in range(k)]


def _largest_that_fits(
    b: PromptBudget, engine: EngineConfig, facts: VideoFacts, text: TextCount | None
) -> int:
    """The largest overview budget whose first turn fits the context: images, their text with
    every timestamp at its longest (the video's end), and the new tokens."""
    per_frame, new = b.overview_tokens_per_frame, engine.max_new_tokens
    if text is None:  # no tokenizer: the images alone
        return max(0, (b.context - new) // per_frame)
    end = [facts.duration]
    fixed = text(end) - (text(end * 2) - text(end))  # the text without a frame
    per_text = text(end * 2) - text(end)  # each frame's timestamp and its line
    most = max(0, (b.context - new - fixed) // (per_frame + per_text))
    while most > 0 and most * per_frame + text(end * most) + new > b.context:
        most -= 1  # the affine count was off (a template that writes frames unevenly)
    return most


def _refusal(
    b: PromptBudget, engine: EngineConfig, frames_flag: str, text_tokens: int, most: int
) -> str:
    text = f" + {text_tokens:,} text tokens" if text_tokens else ""
    least = "" if text_tokens else " at least"
    return (
        f"{frames_flag} {engine.frames}: the first turn over {b.video} needs{least} "
        f"{b.first_turn + text_tokens:,} tokens ({b.overview_frames:,} overview frames x "
        f"{b.overview_tokens_per_frame:,} tokens under engine.max_pixels={engine.max_pixels:,}"
        f"{text}, + {engine.max_new_tokens:,} new tokens), past the model's context of "
        f"{b.context:,}; lower {frames_flag} to at most {most:,}, or engine.max_pixels or "
        "engine.max_new_tokens"
    )


def check_budget(
    engine: EngineConfig,
    facts: VideoFacts,
    k: int,
    arch: str | None,
    context: int | None,
    frames_flag: str = "--frames",
    text: TextCount | None = None,
) -> list[str]:
    """Refuse (``UserError``) an episode whose first turn cannot fit the context; return the
    warnings of one that comes near it, or whose full episode may not fit. Nothing is checked
    when the model's size rule or context is unknown (``arch`` or ``context`` None). ``text``
    (``PromptText.counter``) counts the first turn's text once the images alone come near the
    context; without it the text is not counted."""
    if arch is None or context is None:
        return []
    b = prompt_budget(engine, facts, k, arch, context)
    text_tokens = 0
    if text is not None and b.first_turn > NEAR * b.context:
        text_tokens = text(_spread(facts.duration, b.overview_frames))
    first_turn = b.first_turn + text_tokens
    if first_turn > b.context:
        most = _largest_that_fits(b, engine, facts, text)
        raise UserError(_refusal(b, engine, frames_flag, text_tokens, most))
    warnings = []
    if first_turn > NEAR * b.context:
        counted = f" + {text_tokens:,} text tokens" if text_tokens else ""
        least = "" if text_tokens else " at least"
        warnings.append(
            f"the first turn over {Path(b.video).name} needs{least} {first_turn:,} tokens, "
            f"{first_turn / b.context:.0%} of the model's context of {b.context:,} "
            f"({b.overview_frames:,} overview frames x {b.overview_tokens_per_frame:,} tokens"
            f"{counted} + {engine.max_new_tokens:,} new tokens): little is left for the tool "
            f"rounds; lower {frames_flag} or engine.max_pixels"
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
