"""R_fmt: the format reward and its Exploration-Anchoring term (PROTOCOL §5).

Why it reads ``prefix + completion``: training pre-fills ``<think>`` in the prompt, so the
completion starts inside the reasoning and never contains the opener. Scoring the completion alone
(as the reference does) finds no ``<think>``, zeroes every think term and the anchor, and leaves
GRPO nothing to learn from. Here the pre-filled text is part of the scored text; if the caller
passes a whole rendered prompt, only what follows its last ``<|im_start|>assistant`` header counts
(the system prompt's own examples of tags must not).

Terms (constants in :class:`~paravt.rewards.config.RewardConfig`):

=====================  =====  ==============================================================
base: think            +0.2   a closed ``<think>…</think>`` with ≥ ``think_min_chars`` chars
base: answer           +0.3   the last ``<answer>`` holds at least one letter or digit
base: answer_close     +0.2   ... and is closed by ``</answer>``
base: think_before     +0.3   a ``<think>`` comes before the first tool call (0 with no call)
base: balanced         +0.1   every tag opens before it closes, never nests, all closed —
                              and at least one pair exists (plain text earns nothing)
anchor: close          +0.4   a ``</think>`` closes an open ``<think>``
anchor: flow           +0.3   ``<think>`` → ``</think>`` → ``<answer>`` non-empty ``</answer>``
anchor: unclosed       −0.3   a ``<think>`` is never closed
=====================  =====  ==============================================================

R_fmt = clip(base + anchor_lambda · anchor, 0, 1). The empty-tag exploit
``<think></think><answer></answer>`` earns no answer credit (answer, answer_close and flow need a
non-empty answer); it keeps what its structure is worth — closing the think (+0.4·λ) and
balanced tags (+0.1).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from paravt.rewards.config import RewardConfig

__all__ = ["FormatTerms", "format_reward", "format_score", "format_terms", "scored_text"]

_TAG = re.compile(r"<(/?)(think|answer|tool_call|tool_code|tool_response)>")
_WORD = re.compile(r"[^\W_]")
_ASSISTANT_HEADER = "<|im_start|>assistant"


@dataclass(frozen=True)
class FormatTerms:
    """Each term's contribution (already multiplied by its constant)."""

    think: float = 0.0
    answer: float = 0.0
    answer_close: float = 0.0
    think_before_call: float = 0.0
    balanced: float = 0.0
    anchor_close: float = 0.0
    anchor_flow: float = 0.0
    anchor_unclosed: float = 0.0

    @property
    def base(self) -> float:
        return self.think + self.answer + self.answer_close + self.think_before_call + self.balanced

    @property
    def anchor(self) -> float:
        """The anchor term before λ_anchor, in [−0.3, 0.7] with the default constants."""
        return self.anchor_close + self.anchor_flow + self.anchor_unclosed


def scored_text(prefix: str | None, completion: str | None) -> str:
    """The text the format reward scores: the assistant pre-fill followed by the completion.

    The pre-fill is counted once: when the completion already starts with it (the engine records
    each turn's text with its pre-fill), it is not prepended again — a doubled ``<think>`` would
    read as a nested, never-closed think."""
    prefix = prefix or ""
    completion = completion or ""
    cut = prefix.rfind(_ASSISTANT_HEADER)
    if cut >= 0:
        prefix = prefix[cut + len(_ASSISTANT_HEADER) :]
    head = prefix.strip()
    if head and completion.lstrip().startswith(head):
        return completion
    return prefix + completion


def format_terms(text: str, cfg: RewardConfig | None = None, prefix: str = "") -> FormatTerms:
    """All format terms of ``prefix + text``. Never raises on any string."""
    cfg = cfg or RewardConfig()
    text = scored_text(prefix, text if isinstance(text, str) else "")
    tags = [(m.start(), m.end(), m.group(2), m.group(1) == "/") for m in _TAG.finditer(text)]

    # <think> pairs (a closer closes the most recent open think) and openers left open
    # (open_start, open_end, close_start, close_end)
    think_pairs: list[tuple[int, int, int, int]] = []
    open_thinks: list[tuple[int, int]] = []
    for start, end, name, closing in tags:
        if name != "think":
            continue
        if not closing:
            open_thinks.append((start, end))
        elif open_thinks:
            o_start, o_end = open_thinks.pop()
            think_pairs.append((o_start, o_end, start, end))
    substantive = any(
        len(_TAG.sub("", text[oe:cs]).strip()) >= cfg.think_min_chars
        for _, oe, cs, _ in think_pairs
    )

    # answers: (open_start, open_end, closed, non-empty); an opener is closed when the next
    # answer tag after it is a closer; otherwise its body runs to the next opener or the end
    answers: list[tuple[int, int, bool, bool]] = []
    answer_tags = [t for t in tags if t[2] == "answer"]
    for k, (start, end, _, closing) in enumerate(answer_tags):
        if closing:
            continue
        nxt = answer_tags[k + 1] if k + 1 < len(answer_tags) else None
        body = text[end : nxt[0]] if nxt else text[end:]
        closed = bool(nxt and nxt[3])
        answers.append((start, end, closed, bool(_WORD.search(_TAG.sub("", body)))))
    last = answers[-1] if answers else None
    answer_ok = bool(last and last[3])
    answer_closed = bool(answer_ok and last[2])

    call_starts = [s for s, _, n, c in tags if n in ("tool_call", "tool_code") and not c]
    think_starts = [s for s, _, n, c in tags if n == "think" and not c]
    think_before = bool(call_starts and think_starts and think_starts[0] < call_starts[0])

    balanced = bool(tags) and _balanced(tags)

    flow = any(
        a_start > cs and a_ok and closed
        for (_, _, cs, _) in think_pairs
        for (a_start, _, closed, a_ok) in answers
    )

    return FormatTerms(
        think=cfg.think_bonus if substantive else 0.0,
        answer=cfg.answer_bonus if answer_ok else 0.0,
        answer_close=cfg.answer_close_bonus if answer_closed else 0.0,
        think_before_call=cfg.think_before_call_bonus if think_before else 0.0,
        balanced=cfg.balanced_bonus if balanced else 0.0,
        anchor_close=cfg.anchor_close if think_pairs else 0.0,
        anchor_flow=cfg.anchor_flow if flow else 0.0,
        anchor_unclosed=cfg.anchor_unclosed if open_thinks else 0.0,
    )


def _balanced(tags: list[tuple[int, int, str, bool]]) -> bool:
    """Every tag kind alternates open, close, open, close … and ends closed."""
    state: dict[str, bool] = {}
    for _, _, name, closing in tags:
        is_open = state.get(name, False)
        if closing != is_open:
            return False
        state[name] = not closing
    return not any(state.values())


def format_score(base: float, anchor: float, cfg: RewardConfig | None = None) -> float:
    """R_fmt = clip(base + λ_anchor · anchor, 0, 1)."""
    cfg = cfg or RewardConfig()
    return min(1.0, max(0.0, base + cfg.anchor_lambda * anchor))


def format_reward(
    text: str, cfg: RewardConfig | None = None, prefix: str = ""
) -> tuple[float, float]:
    """``(fmt_base, anchor)`` of ``prefix + text``; combine them with :func:`format_score`."""
    terms = format_terms(text, cfg, prefix)
    return terms.base, terms.anchor
