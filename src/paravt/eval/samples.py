"""One evaluation question, in a benchmark-independent shape.

Every adapter turns its benchmark's native rows into ``EvalSample`` objects, so the runner,
the scorer and the result files never need to know which benchmark a row came from. Option
texts are stored without their letter prefixes (the prompt renders ``A. …`` itself) and the
gold answer is normalised per question type: a letter for ``mcq``, ``[start, end]`` seconds
for ``tvg``, the reference text for ``oe``.

A row whose gold answer cannot be used (an MLVU answer that matches no candidate, a gold letter
outside the options) still becomes a sample: ``problem`` says why, the runner records it as an
``annotation`` error and it stays in the denominator instead of being guessed or dropped.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from paravt.schema.questions import LETTERS, QUESTION_TYPES, QuestionType  # noqa: F401 - re-exported

__all__: list[str] = []  # nothing here is for the other rooms


@dataclass
class EvalSample:
    """One question of one split, with everything needed to run and to score it."""

    id: str
    split: str
    video: str
    question: str
    question_type: QuestionType
    options: list[str] = field(default_factory=list)
    answer: Any = None
    groups: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    problem: str | None = None

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> EvalSample:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class LoadedSplit:
    """What an adapter read: the samples in file order, and rows it could not turn into one.

    ``skipped`` holds ``(row reference, reason)`` pairs for rows that have no question at all
    (or belong to a task outside the split); they are reported in the summary so nothing
    disappears silently. ``sources`` are the annotation files read; ``ignored`` the files beside
    them that look like annotations too and were not read (``load_split`` fills it).
    """

    split: str
    samples: list[EvalSample]
    skipped: list[tuple[str, str]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)


def letter(index: int) -> str:
    """The option letter at ``index`` (0 → ``A``)."""
    return LETTERS[index]
