"""One question per JSON object: the row ``paravt infer -q -`` reads on stdin, ``paravt eval
--benchmark jsonl`` reads from its file, and training reads from a JSON-lines data file (a
ParaVT parquet row is turned into the same object first).

``parse_question`` is the one parser, and it holds the one set of defaults (docs/EVAL.md,
"Question rows"):

- ``question`` (required): a non-empty string; a ``<video>`` marker is removed.
- ``options``: a list of option texts, or null, absent or ``[]`` for none; ``A. `` / ``(A)``
  prefixes are removed (the prompt letters the options itself).
- ``question_type`` (``type`` is the short spelling): ``mcq``, ``tvg`` or ``oe``, any case;
  absent or ``auto``: ``mcq`` when options are given, else ``oe``.
- ``answer``: the gold answer, optional in the row; ``QuestionRow.gold`` is what it means — a
  letter for ``mcq`` (from a letter, a 0-based index or an option's text; a question without
  options carries them in its text, and its answer is a letter), ``[start, end]`` seconds for
  ``tvg`` (``[s, e]``, ``"s - e"``, ``"m:ss to m:ss"``), the reference text for ``oe``. Why an
  answer cannot be used, or that there is none, is ``QuestionRow.problem``.
- ``video`` and ``id``: optional here; the reader fills what is absent (infer: its VIDEO
  argument; ids by place: ``q<N>`` on stdin, ``<file stem>-<line>`` in eval, ``row<N>`` in
  training, since ids key eval's resume and training's gating hash).
- ``frames``: a positive integer, the episode's overview budget K (read by ``infer``; eval and
  training set K themselves).
- ``duration_group``, ``task_type`` and ``meta`` (a mapping): eval's groups and kept metadata.

A row that cannot be a question at all (not an object, no question, options that are not a list
of texts, an unknown type, a bad ``frames``) is a ``RowError`` naming why; the reader decides
what that means (infer: exit 2 naming the line; eval and training: the row is skipped and
listed with the reason). Who reads which problem: eval keeps a question whose gold cannot be
used as an ``annotation`` error, training skips it, infer has no gold.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from paravt.errors import UserError
from paravt.rewards.answers import mcq_gold_letter, parse_span
from paravt.schema.questions import (
    LETTERS,
    QUESTION_TYPES,
    QuestionRow,
    QuestionType,
    UnknownQuestionTypeError,
    question_type_of,
)

__all__ = ["RowError", "clean_options", "parse_question", "resolve_video", "strip_option_prefix"]

#: a marker the ParaVT release puts where the video goes in the question's text
VIDEO_MARKER = "<video>"
#: file extensions a bare video id is tried with (``resolve_video``)
VIDEO_EXTENSIONS = (".mp4", ".mkv", ".webm", ".avi", ".mov", ".m4v")

_OPTION_PREFIX = re.compile(r"^\s*\(?([A-J])\s*[\.\):]\s*")


class RowError(UserError):
    """A row that cannot be a question; the message is the reason (the reader names the row)."""


def strip_option_prefix(text: str) -> tuple[str | None, str]:
    """``"B. a dog"`` → ``("B", "a dog")``; text without a letter prefix → ``(None, text)``."""
    text = str(text)
    m = _OPTION_PREFIX.match(text)
    if m and m.end() < len(text):
        return m.group(1), text[m.end() :].strip()
    return None, text.strip()


def clean_options(raw: Iterable[Any]) -> list[str]:
    """Option texts with any ``A. `` / ``(A)`` prefix removed, in the given order."""
    return [strip_option_prefix(str(o))[1] for o in raw]


def resolve_video(root: str | Path | None, name: str, subdirs: Iterable[str] = ()) -> Path:
    """Where ``name`` (a path, a file name or a bare id) lives: as given when absolute (``~``
    expanded), else under ``root`` (and each of ``subdirs``), tried as given and then with each
    known video extension. When nothing exists the first candidate is returned, so the reader
    reports the exact path it expected."""
    path = Path(str(name).strip()).expanduser()
    base = Path(root).expanduser() if root not in (None, "") else Path()
    roots = [base] + [base / s for s in subdirs]
    has_ext = path.suffix.lower() in VIDEO_EXTENSIONS
    stem = str(path.with_suffix("")) if has_ext else str(path)
    candidates: list[Path] = []
    for r in roots:
        if has_ext:
            candidates.append(r / path)
        candidates.extend(r / f"{stem}{ext}" for ext in VIDEO_EXTENSIONS)
    for c in candidates:
        if c.is_file():
            return c
    return candidates[0]


def gold_of(qtype: str, answer: Any, options: list[str] | None) -> tuple[Any, str | None]:
    """``(gold, problem)``: the gold ``answer`` means for a question of ``qtype`` (a letter for
    mcq, ``[start, end]`` for tvg, text for oe), or ``None`` and why it cannot be used."""
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return None, "no answer given"
    if qtype == "mcq":
        letter = mcq_gold_letter(answer, options)
        if letter is None or letter not in LETTERS[: len(options) if options else len(LETTERS)]:
            return None, f"answer {answer!r} is not one of the option letters or texts"
        return letter, None
    if qtype == "tvg":
        span = parse_span(answer)  # (start, end) sorted, so a reversed list is checked as given
        given = answer if isinstance(answer, (list, tuple)) and len(answer) == 2 else span
        if span is None or given is None or not float(given[1]) > float(given[0]):
            return None, f"answer {answer!r} is not a [start, end] span with end > start"
        return [float(span[0]), float(span[1])], None
    return str(answer), None


def _options(row: dict) -> list[str] | None:
    raw = row.get("options")
    if raw in (None, []):
        return None
    if not isinstance(raw, list) or not all(
        isinstance(o, str | int | float) and not isinstance(o, bool) for o in raw
    ):
        raise RowError("options must be a list of strings or null")
    return clean_options(raw)


def _question_type(row: dict, options: list[str] | None) -> QuestionType:
    given = row.get("question_type", row.get("type"))
    qtype = str(given).lower() if given not in (None, "", "auto") else ("mcq" if options else "oe")
    try:
        return question_type_of(qtype)
    except UnknownQuestionTypeError:
        raise RowError(f"question_type {given!r} is not one of {list(QUESTION_TYPES)}") from None


def _frames(row: dict) -> int | None:
    k = row.get("frames")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise RowError(f'"frames" must be a positive integer, got {k!r}')
    return k


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def parse_question(row: Any) -> QuestionRow:
    """The question one JSON object holds, with the defaults applied; ``RowError`` when it
    cannot be one (module docstring)."""
    if not isinstance(row, dict):
        raise RowError("not a JSON object")
    question = row.get("question")
    if not isinstance(question, str) or not question.replace(VIDEO_MARKER, "").strip():
        raise RowError('no question given (a non-empty "question" string)')
    options = _options(row)
    qtype = _question_type(row, options)
    gold, problem = gold_of(qtype, row.get("answer"), options)
    groups = {
        key: str(row[name])
        for key, name in (("duration", "duration_group"), ("task", "task_type"))
        if row.get(name) not in (None, "")
    }
    return QuestionRow(
        question=question.replace(VIDEO_MARKER, "").strip(),
        question_type=qtype,
        options=options,
        answer=row.get("answer"),
        gold=gold,
        problem=problem,
        video=_text(row.get("video")),
        id=_text(row.get("id")),
        frames=_frames(row),
        groups=groups,
        meta=dict(row["meta"]) if isinstance(row.get("meta"), dict) else {},
    )
