"""The schema floor: the domain's vocabulary and the rows that cross rooms, in one low room.

What lives here is what two or more rooms must agree on and nothing else: the question types and
option letters (``questions``), the question row a data file or a benchmark gives, an episode's
tool-call counts (``tools``), the episode engine's records (``episodes``: what goes into an
episode, what crosses the backend boundary, what comes out), and the training run's episode
dump row (``episode_log``), which the trainer writes and the viewer reads back. Plain dataclasses, ``Literal`` types
and their checks; no reading, no scoring, no I/O, no heavy import (torch only inside a function).

Why a room of its own, and why this name: the vocabulary used to live in the reward's answer
reader (``paravt.rewards.answers``), so six rooms imported a regex reader for the letters
``A``-``J``, and ``rewards`` had to sit below the engine only because ``ToolCounts`` lived there.
"schema" says what the room is — the shapes of the data, the contract between rooms and files —
the way a database or JSON schema is the agreed shape that readers and writers both check
against; "types" would be too broad (every module has types) and "records" too narrow (the
question vocabulary is not a record). The room sits at the bottom of the layer rule
(docs/INTERFACES.md): it imports only ``paravt.errors``; every other room may import it.
"""

from __future__ import annotations

from paravt.schema.questions import (
    LETTERS,
    QUESTION_TYPES,
    QuestionRow,
    QuestionType,
    TooFewOptionsError,
    TooManyOptionsError,
    UnknownQuestionTypeError,
    question_type_of,
    require_letterable,
)
from paravt.schema.tools import ToolCounts

__all__ = [
    "LETTERS",
    "QUESTION_TYPES",
    "QuestionRow",
    "QuestionType",
    "TooFewOptionsError",
    "TooManyOptionsError",
    "ToolCounts",
    "UnknownQuestionTypeError",
    "question_type_of",
    "require_letterable",
]
