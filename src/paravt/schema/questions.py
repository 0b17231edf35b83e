"""The question vocabulary (docs/PROTOCOL.md §5.1): question types, option letters, the limits on
options, and the question row a data file or a benchmark gives.

Why here and not in the reward's reader: prompts letter options, data files and benchmarks check
them, the viewer and the sheets draw them, and the reward reads answers against them. All of them
need the same ``A``-``J`` and the same three types; none of them needs the regex reader that used
to hold them (``paravt.rewards.answers``, which imports them from here now).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from paravt.errors import UserError

__all__ = [
    "LETTERS",
    "QUESTION_TYPES",
    "QuestionRow",
    "QuestionType",
    "TooFewOptionsError",
    "TooManyOptionsError",
    "UnknownQuestionTypeError",
    "question_type_of",
    "require_letterable",
]

#: The option letters of docs/PROTOCOL.md §5.1 (A–J): prompts letter options with these, and
#: extraction and scoring read only these. The one definition; every other room imports it.
LETTERS = "ABCDEFGHIJ"
#: Question types (docs/PROTOCOL.md §5.1): multiple choice, temporal grounding, open-ended. The
#: one definition: annotations use ``QuestionType``, checks read ``QUESTION_TYPES`` from it.
QuestionType = Literal["mcq", "tvg", "oe"]
QUESTION_TYPES: tuple[QuestionType, ...] = get_args(QuestionType)


class UnknownQuestionTypeError(UserError):
    """A sample's question type is not one the reward knows."""


class TooManyOptionsError(UserError):
    """A question has more options than ``LETTERS`` can label, or (``TooFewOptionsError``) too
    few to choose from."""


class TooFewOptionsError(TooManyOptionsError):
    """A multiple-choice question with one option: nothing to choose, and every answer scores 1."""


def question_type_of(value: object, where: str = "question_type") -> QuestionType:
    """``value`` as a ``QuestionType``, checked: the one way a string from a file, a flag or a
    benchmark becomes one. ``UnknownQuestionTypeError`` names ``where`` and the known types."""
    for known in QUESTION_TYPES:
        if value == known:
            return known
    raise UnknownQuestionTypeError(
        f"{where}={value!r} is not a question type; use one of {', '.join(QUESTION_TYPES)}"
    )


def require_letterable(options: Sequence[Any] | None, question: str) -> None:
    """Raise :class:`TooManyOptionsError` when ``options`` cannot all be lettered A–J, and
    :class:`TooFewOptionsError` when there is only one.

    Why where a question is built: an eleventh option would be shown to the model under a letter
    that extraction never reads, so every answer to it would score 0 without a word; a single
    option is no choice at all, and "A" would be right whatever the model saw. ``question``
    names the question in the message (its id and/or text)."""
    if options is not None and len(options) == 1:
        raise TooFewOptionsError(
            f"{question} has 1 option ({str(options[0])[:60]!r}); a multiple-choice question "
            "needs at least 2. Add the other choices, or give no options for an open-ended "
            "question."
        )
    if options is not None and len(options) > len(LETTERS):
        raise TooManyOptionsError(
            f"{question} has {len(options)} options; at most {len(LETTERS)} can be lettered "
            f"({LETTERS[0]}–{LETTERS[-1]}, PROTOCOL §5). Drop options or split the question."
        )


@dataclass
class QuestionRow:
    """One question as a row gives it, with the defaults applied (``paravt.data.questions``
    reads one from a JSON object; its docstring says which defaults)."""

    question: str
    question_type: QuestionType
    options: list[str] | None = None
    answer: Any = None
    gold: Any = None
    problem: str | None = None
    video: str | None = None
    id: str | None = None
    frames: int | None = None
    groups: dict[str, str] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
