"""A generic JSON-lines split: the user's own questions (and the toy task's eval split).

Expected layout::

    --data PATH:   a .jsonl file, or a folder holding eval.jsonl (else test.jsonl, else its
                   only *.jsonl file)
    --videos DIR:  relative ``video`` paths are resolved under DIR (absolute paths as given)

One JSON object per line, one question per row: ``video``, ``question``, ``question_type``
(``mcq`` | ``tvg`` | ``oe``; ``mcq`` when missing and ``options`` are given), ``options`` (a
list of option texts for ``mcq``; ``A. ``/``(A)`` prefixes are removed), ``answer`` (``mcq``: a
letter, a 0-based index or the option text; ``tvg``: ``[start, end]`` seconds or ``"s - e"``;
``oe``: the reference text); optional ``id`` (else ``<file stem>-<line>``), ``duration_group``
and ``task_type`` (accuracy is also reported by these groups) and ``meta`` (kept as is).

A row without a video or a question, with an unknown question type, or that is not an object is
skipped and listed with its reason; a row whose gold answer cannot be used stays in the
denominator as an ``annotation`` error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from paravt.eval.adapters._files import AnnotationError, clean_options, read_jsonl, resolve_video
from paravt.eval.samples import LETTERS, QUESTION_TYPES, EvalSample, LoadedSplit
from paravt.rewards import mcq_gold_letter, parse_span

LAYOUT = "a .jsonl file, or a folder with eval.jsonl; rows {video, question, options, answer, question_type}"
PREFERRED = ("eval.jsonl", "test.jsonl")


def find_rows_file(data: Path) -> Path:
    """The rows file ``data`` names: the file itself, or the split file in the folder."""
    if data.is_file():
        return data
    if not data.is_dir():
        raise AnnotationError(f"jsonl: {data} is neither a .jsonl file nor a folder ({LAYOUT})")
    for name in PREFERRED:
        if (data / name).is_file():
            return data / name
    found = sorted(data.glob("*.jsonl"))
    if len(found) == 1:
        return found[0]
    listed = ", ".join(p.name for p in found) or "none"
    raise AnnotationError(
        f"jsonl: cannot tell which rows file in {data} to read (found: {listed}); "
        f"pass the file itself as --data, or name it eval.jsonl"
    )


def _gold(qtype: str, answer: Any, options: list[str]) -> tuple[Any, str | None]:
    """(normalised gold, problem): a letter for mcq, ``[s, e]`` for tvg, text for oe."""
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return None, "no answer given"
    if qtype == "mcq":
        if not options:
            return None, "a multiple-choice row needs options"
        letter = mcq_gold_letter(answer, options)
        if letter is None or letter not in LETTERS[: len(options)]:
            return None, f"answer {answer!r} is not one of the option letters or texts"
        return letter, None
    if qtype == "tvg":
        span = parse_span(answer)  # (start, end) sorted, so a reversed list is checked as given
        given = answer if isinstance(answer, (list, tuple)) and len(answer) == 2 else span
        if span is None or not float(given[1]) > float(given[0]):
            return None, f"answer {answer!r} is not a [start, end] span with end > start"
        return [float(span[0]), float(span[1])], None
    return str(answer), None


def load(data: Path, videos: Path) -> LoadedSplit:
    path = find_rows_file(Path(data))
    samples, skipped = [], []
    for lineno, row in read_jsonl(path):
        ref = f"{path.name}:{lineno}"
        if not isinstance(row, dict):
            skipped.append((ref, "not a JSON object"))
            continue
        if not row.get("video"):
            skipped.append((ref, "no video given"))
            continue
        question = str(row.get("question") or "").strip()
        if not question:
            skipped.append((ref, "no question given"))
            continue
        options = row.get("options") or []
        if not isinstance(options, list):
            skipped.append((ref, "options must be a list of strings or null"))
            continue
        options = clean_options(options)
        qtype = str(row.get("question_type") or ("mcq" if options else "")).lower()
        if qtype not in QUESTION_TYPES:
            skipped.append(
                (ref, f"question_type {qtype or None!r} is not one of {list(QUESTION_TYPES)}")
            )
            continue
        gold, problem = _gold(qtype, row.get("answer"), options)
        groups = {
            key: str(row[field])
            for key, field in (("duration", "duration_group"), ("task", "task_type"))
            if row.get(field) not in (None, "")
        }
        meta = row.get("meta") if isinstance(row.get("meta"), dict) else {}
        samples.append(
            EvalSample(
                id=str(row.get("id") or f"{path.stem}-{lineno}"),
                split="jsonl",
                video=str(resolve_video(videos, str(row["video"]))),
                question=question,
                question_type=qtype,
                options=options if qtype == "mcq" else [],
                answer=gold,
                groups=groups,
                meta=dict(meta, source_line=lineno),
                problem=problem,
            )
        )
    return LoadedSplit("jsonl", samples, skipped, [str(path)])
