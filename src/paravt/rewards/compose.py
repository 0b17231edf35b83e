"""One call that turns an episode into its PARA-GRPO reward, with every term kept for logging.

R = R_acc + format_weight · R_fmt + R_tool  (docs/PROTOCOL.md §5.1), where R_fmt already includes
λ_anchor · anchor. ``RewardBreakdown.anchor`` is the raw anchor term (before λ) so the logs show
whether the model closes its reasoning, independently of the weight.

Turns are explicit: pass the completion as one text per generated turn (``[t.text for t in
record.turns]``), so R_fmt's answer terms read the final turn and each turn's pre-fill counts once.
A single string is one turn (tests, external callers).

Which answer is scored: pass ``answer`` (the engine record's final answer, ``prediction``) when you
have it. Without it the answer is read from the last turn: the text after its last
``</tool_response>`` if any, else from its last ``<answer>`` onward, else the whole turn, then
docs/PROTOCOL.md §4 extraction — so an ``<answer>`` written in an earlier tool turn does not count.
What the final turn writes after its closed answer is read with it: a withdrawal (``Wait, C``)
makes it no answer, another candidate named there makes two (docs/ANSWERS.md, "After the answer").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

from paravt.grammar import answer_tail, extract_answer
from paravt.rewards.answers import accuracy, bonus_earned
from paravt.rewards.config import RewardConfig
from paravt.rewards.format import format_score, format_terms
from paravt.rewards.tool import tool_reward
from paravt.schema.tools import ToolCounts

__all__ = ["RewardBreakdown", "compose", "final_answer_text"]


@dataclass(frozen=True)
class RewardTerm:
    """One reported term of the reward: the ``RewardBreakdown`` field that holds it and what it
    is (docs/PROTOCOL.md §5.1)."""

    name: str
    about: str


@dataclass
class RewardBreakdown:
    """Every term of one episode's reward; ``total`` is what GRPO normalises within the group.

    ``TERMS`` is the one list of the reported terms, in the order every log, metric, dump,
    page and progress line shows them: they all iterate it (``terms()``), so a new term is a
    field here, its entry in ``TERMS`` and its computation in ``compose``, all in this file."""

    acc: float
    fmt: float  # R_fmt after λ_anchor and clipping, in [0, 1]
    anchor: float  # raw anchor term, before λ_anchor
    tool: float
    total: float
    fmt_base: float = 0.0  # the base format terms alone, before the anchor and clipping

    TERMS: ClassVar[tuple[RewardTerm, ...]] = (
        RewardTerm("acc", "R_acc: the answer against the gold (letter, IoU or F1)"),
        RewardTerm("fmt", "R_fmt: the format terms and λ_anchor × the anchor, clipped to [0, 1]"),
        RewardTerm("anchor", "the raw anchor term (before λ_anchor)"),
        RewardTerm("tool", "R_tool: from the execution record, with the correct-answer bonus"),
        RewardTerm("total", "R = R_acc + w_fmt · R_fmt + R_tool"),
    )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(t.name for t in cls.TERMS)

    def terms(self) -> dict[str, float]:
        """The reported terms by name, in ``TERMS`` order (what logs and pages show)."""
        return {t.name: float(getattr(self, t.name)) for t in self.TERMS}

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def final_answer_text(completion: str) -> str:
    """The part of a (possibly multi-turn) completion that holds the final answer."""
    text = completion or ""
    cut = text.rfind("</tool_response>")
    if cut >= 0:
        text = text[cut + len("</tool_response>") :]
    cut = text.rfind("<answer>")
    if cut > 0:
        text = text[cut:]
    return text


def _tail(final_turn: str, answer: str | None) -> str:
    """What the final turn writes after the closed answer that ``answer`` is (the engine's
    prediction): the answer reader reads it with the answer (docs/ANSWERS.md, "After the
    answer"). Without ``answer`` the reader finds the tail in the turn's text itself."""
    if answer is None or extract_answer(final_turn).strip() != str(answer).strip():
        return ""
    return answer_tail(final_turn)


def compose(
    prefix: str | None,
    completion: str | Sequence[str] | None,
    execution: Any,
    gold: Any,
    question_type: str,
    options: Sequence[Any] | None = None,
    cfg: RewardConfig | None = None,
    answer: str | None = None,
    question: str | None = None,
) -> RewardBreakdown:
    """The reward of one episode. ``prefix`` is the assistant pre-fill (e.g. ``"<think>\\n"``),
    ``completion`` the generated turns' texts (a list, one per turn; a string is one turn),
    ``execution`` its tool execution counts, ``question`` the question asked (reasoning that only
    restates it earns no think term; without it that check is skipped)."""
    cfg = cfg or RewardConfig()
    if isinstance(completion, (list, tuple)):
        turns = [t if isinstance(t, str) else "" for t in completion] or [""]
    else:
        turns = [completion if isinstance(completion, str) else ""]
    prediction = answer if answer is not None else final_answer_text(turns[-1])
    acc = accuracy(
        prediction, gold, question_type, options, cfg.oe_metric, after=_tail(turns[-1], answer)
    )
    correct = bonus_earned(prediction, gold, question_type, options, acc, cfg)
    ex = ToolCounts.of(execution)
    terms = format_terms(turns, cfg, prefix=prefix or "", calls_made=ex.called, question=question)
    fmt = format_score(terms.base, terms.anchor, cfg)
    tool = tool_reward(ex, acc, cfg, correct=correct)
    total = acc + cfg.format_weight * fmt + tool
    return RewardBreakdown(
        acc=acc, fmt=fmt, anchor=terms.anchor, tool=tool, total=total, fmt_base=terms.base
    )
