"""``ToyOracleBackend``: a scripted policy that solves the toy task through the real engine.

Why: ``paravt sft`` needs trajectories that show the behaviour we want the model to learn —
think, sweep the video with parallel ``crop_video`` calls, read the needle off the returned
frames, answer — produced by the real episode engine, so tool turns hold real decoded frames and
the token stream is the one the trainer uses. Two knobs make checkpoints with different priors:

- ``tool_prior``: share of episodes that call tools; the others answer from the overview frames
  (the colour when an overview frame shows it, else a deterministic guess);
- ``format_noise``: share of turns whose structure is broken (an unclosed ``</think>``, a
  missing ``</answer>``, a malformed call).

``answer_form`` says how an mcq answer names its option: ``"letter"`` (the option lines restated,
then the letter: ``<answer>B</answer>``) or ``"text"`` (the option's own text:
``<answer>red</answer>``, which every reader takes as the option whose whole text it is,
docs/ANSWERS.md rule 4). Why both: the letter is a lookup (which line holds the colour, which
letter starts it) that a 5 M random-init model did not learn inside an episode in any form we
tried (experiments/toy_paradox/LOG.md, "The letter"); the text form lets the toy measure
seeing and tool use without that lookup.

Every decision is a hash of (seed, episode id[, turn]): no RNG state, reproducible runs. The
oracle sees only what a model sees — the ``GenRequest`` — and infers the video length from the
overview times (the task's durations are few and fixed), the question type from the prompt, and
the needle from pixels (``paravt.toy.detect``). It reads frames, so it needs
``evidence="frames"`` and ``parallel`` dispatch. In ``direct`` mode it answers from the
overview, as with ``tool_prior=0``. With sub-agents it answers their requests with a
description of the window, but the main turn then has no frames and guesses.

Load it by import path ``paravt.toy.oracle:ToyOracleBackend`` with keyword options.

Serves the engine's needs: images (it reads each frame's decoded pixels to find the
needle); token ids when given a processor (through ``ScriptedBackend``). No logprobs, no pixel
rows.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Any

from paravt.agent.backend import BackendBase
from paravt.agent.scoring import episode_reward  # noqa: F401 - the toy tests and benchmarks score with it
from paravt.backends.scripted import ScriptedBackend
from paravt.errors import ConfigError
from paravt.schema.episodes import Generation, GenRequest
from paravt.toy.detect import needle_colour
from paravt.toy.task import ToyTaskConfig, infer_duration, tiling_windows

__all__ = ["ANSWER_FORMS", "ToyOracleBackend", "episode_reward"]

_OPTION_LINE = re.compile(r"^([A-J])\. (.+)$", re.MULTILINE)
#: the ``video_path`` argument the oracle writes (the tool never opens it, PROTOCOL §1)
VIDEO_PATH_ARG = "video"
BREAKS = ("unclosed_think", "malformed_call", "missing_answer_close")
#: how an mcq answer names its option (module docstring)
ANSWER_FORMS = ("letter", "text")


def _unit(seed: int, *parts: Any) -> float:
    """A stable number in [0, 1) from the seed and the parts (episode id, purpose, turn)."""
    key = "\x1f".join([str(int(seed))] + [str(p) for p in parts]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2.0**64


def _user_text(messages: list[dict]) -> str:
    for m in messages:
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return content
        return "\n".join(p.get("text", "") for p in content or [] if p.get("type") == "text")
    return ""


class ToyOracleBackend(BackendBase):
    """A backend (``generate(list[GenRequest]) -> list[Generation]``) playing the oracle policy.

    ``processor`` (a processor, a ``ChatCodec`` or a model folder) turns on token space, as for
    ``ScriptedBackend``, whose replay machinery this wraps: the engine then records token ids,
    a loss mask and images for SFT.
    """

    name = "toy-oracle"

    def __init__(
        self,
        tool_prior: float = 1.0,
        format_noise: float = 0.0,
        seed: int = 0,
        n_windows: int | None = None,
        durations: list[int] | None = None,
        needle_seconds: float | None = None,
        answer_form: str = "letter",
        processor: Any = None,
    ):
        task = ToyTaskConfig()  # the task's defaults are the oracle's defaults
        self.tool_prior = float(tool_prior)
        self.format_noise = float(format_noise)
        self.seed = int(seed)
        self.n_windows = int(n_windows if n_windows is not None else task.sweep_windows)
        self.durations = [int(d) for d in (durations or task.durations)]
        self.needle_seconds = float(needle_seconds or task.needle_seconds)
        for name in ("tool_prior", "format_noise"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(
                    f"ToyOracleBackend {name}={getattr(self, name)}: give a share in [0, 1]"
                )
        if answer_form not in ANSWER_FORMS:
            raise ConfigError(
                f"ToyOracleBackend answer_form={answer_form!r}: give one of {list(ANSWER_FORMS)}"
            )
        self.answer_form = answer_form
        if not 1 <= self.n_windows <= 16:
            raise ConfigError(f"ToyOracleBackend n_windows={self.n_windows}: give 1 to 16 windows")
        self._replay = ScriptedBackend(self._turn, processor=processor, subagent=self._describe)
        self.codec = self._replay.codec

    @property
    def batches(self) -> list[list[GenRequest]]:
        """Every ``generate`` call's requests, in order."""
        return self._replay.batches

    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        return self._replay.generate(requests)

    # -- the policy ------------------------------------------------------------------------
    def _turn(self, req: GenRequest) -> str:
        text = _user_text(req.messages)
        options = dict(_OPTION_LINE.findall(text))
        overview = [it for it in req.images if it.source == "overview"]
        duration = infer_duration([it.time for it in overview], self.durations)
        episode = req.episode_id
        offered = any(  # direct mode's system prompt offers no tool: answer from the overview
            m.get("role") == "system" and "crop_video" in str(m.get("content"))
            for m in req.messages
        )
        if (
            req.turn == 0
            and not req.forced
            and offered
            and _unit(self.seed, episode, "tools") < self.tool_prior
        ):
            full = self._sweep(duration)
        else:
            full = self._answer(options, req.images, duration, episode)
        if _unit(self.seed, episode, "noise", req.turn) < self.format_noise:
            full = self._break(full, episode, req.turn)
        return full.removeprefix(req.prefill)

    def _sweep(self, duration: float) -> str:
        calls = [
            "<tool_call>\n"
            + json.dumps(
                {
                    "name": "crop_video",
                    "arguments": {"video_path": VIDEO_PATH_ARG, "start_time": s, "end_time": e},
                }
            )
            + "\n</tool_call>"
            for s, e in tiling_windows(duration, self.n_windows)
        ]
        think = (
            "<think>\nThe square is on screen for a few seconds only, so the overview frames can "
            f"miss it. The video is {duration:.0f} s long: I sweep it with {self.n_windows} "
            "windows at once.\n</think>\n"
        )
        return think + "\n".join(calls)

    def _answer(self, options: dict, images: list, duration: float, episode: str) -> str:
        seen: dict[float, str | None] = {}
        for it in sorted(images, key=lambda it: it.time):
            seen.setdefault(round(float(it.time), 3), needle_colour(it.data))
        hits = [t for t, c in seen.items() if c is not None]
        where = "windows" if any(it.source == "tool" for it in images) else "overview"
        if not hits:
            reason = f"No coloured square is visible in the {where} frames, so I have to guess."
        else:
            colour = Counter(c for c in seen.values() if c is not None).most_common(1)[0][0]
            reason = f"The {where} frames show a {colour} square"
            # times only where the answer needs them: a window's frames carry no time label, so
            # for mcq they would be loss tokens the model cannot read off its input
            reason += "." if options else f" from {min(hits):.1f}s to {max(hits):.1f}s."
        if options:
            letters = [k for k, v in options.items() if hits and v.strip().lower() == colour]
            if not letters:
                keys = sorted(options)
                letters = [keys[int(_unit(self.seed, episode, "guess") * len(keys))]]
            elif self.answer_form == "letter":
                # the options restated next to the answer, then the match: the letter becomes a
                # lookup in the last few lines instead of in the question hundreds of tokens
                # back, which a 5 M model did not learn (docs/TOY_TASK.md, "The oracle")
                listed = "\n".join(f"{k}. {options[k]}" for k in sorted(options))
                reason += f"\n{listed}\nThe {colour} square is option {letters[0]}."
            answer = letters[0] if self.answer_form == "letter" else options[letters[0]].strip()
        else:
            s, e = self._span(seen, duration)
            answer = f"[{s:.1f}, {e:.1f}]"
        return f"<think>\n{reason}\n</think>\n<answer>{answer}</answer>"

    def _span(self, seen: dict[float, str | None], duration: float) -> tuple[float, float]:
        """The needle's span from which sampled frames show it and which do not.

        Its start lies after the last miss before the first hit and at or before the first hit;
        its end after the last hit and at or before the next miss; its length is known. The
        midpoint of the starts that satisfy all four is the estimate.
        """
        length = self.needle_seconds
        hits = [t for t, c in seen.items() if c is not None]
        if not hits:
            start = duration / 2 - length / 2
            return start, start + length
        first, last = min(hits), max(hits)
        before = max((t for t, c in seen.items() if c is None and t < first), default=0.0)
        after = min((t for t, c in seen.items() if c is None and t > last), default=duration)
        lo, hi = max(before, last - length), min(first, after - length)
        if hi < lo:
            lo, hi = last - length, first
        start = min(max((lo + hi) / 2, 0.0), max(duration - length, 0.0))
        return start, start + length

    def _break(self, text: str, episode: str, turn: int) -> str:
        """One structural fault, chosen by hash among those the text allows."""
        kinds = [k for k in BREAKS if k != "malformed_call" or "<tool_call>" in text]
        kinds = [k for k in kinds if k != "missing_answer_close" or "</answer>" in text]
        kind = kinds[int(_unit(self.seed, episode, "break", turn) * len(kinds))]
        if kind == "unclosed_think":
            return text.replace("</think>", "", 1)
        if kind == "missing_answer_close":
            return text.replace("</answer>", "", 1)
        head, _, tail = text.partition("}}\n</tool_call>")
        return head + "}\n</tool_call>" + tail  # one brace short: invalid JSON

    def _describe(self, req: GenRequest) -> str:
        """A sub-agent's summary of one window: the square's colour and times, if shown."""
        hits = [(it.time, needle_colour(it.data)) for it in req.images]
        hits = [(t, c) for t, c in hits if c is not None]
        if not hits:
            return "Only a moving grey background; no coloured square."
        return f"A {hits[0][1]} square is visible from {hits[0][0]:.1f}s to {hits[-1][0]:.1f}s."
