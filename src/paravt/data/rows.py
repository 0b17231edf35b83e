"""Read training rows from a ParaVT-style parquet file or a JSON-lines file.

Parquet (the ParaVT release layout): ``prompt`` is a list of chat messages whose user text holds a
``<video>`` marker, ``videos`` lists the video (a path, or a dict with ``video``/``path``), and
``extra_info`` holds ``answer`` and ``question_type`` (optionally ``options``).
JSON lines: ``video``, ``question``, ``options`` (list or null), ``answer``, ``question_type``
(``id`` optional). A row that cannot be understood is skipped with its reason, never fatal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paravt.errors import UserError
from paravt.rewards.answers import QUESTION_TYPES, TooManyOptionsError, require_letterable

VIDEO_MARKER = "<video>"


@dataclass
class TrainRow:
    """One training question: the episode input before gating picks K."""

    id: str
    video: str
    question: str
    options: list[str] | None
    answer: Any
    question_type: str
    source_index: int = 0


@dataclass
class SkippedRow:
    index: int
    id: str
    video: str
    reason: str


@dataclass
class ReadResult:
    rows: list[TrainRow] = field(default_factory=list)
    skipped: list[SkippedRow] = field(default_factory=list)


def resolve_video(video: str, video_root: str | Path | None) -> str:
    p = Path(video).expanduser()
    if not p.is_absolute() and video_root:
        p = Path(video_root).expanduser() / p
    return str(p)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return "" if content is None else str(content)


def _video_of(videos: Any) -> str | None:
    if hasattr(videos, "tolist"):
        videos = videos.tolist()
    if isinstance(videos, (list, tuple)):
        videos = videos[0] if len(videos) else None
    if isinstance(videos, dict):
        videos = videos.get("video") or videos.get("path")
    return str(videos) if videos else None


def _normalise(
    index: int,
    raw_id: Any,
    video: str | None,
    question: str,
    options: Any,
    answer: Any,
    qtype: Any,
    video_root: str | Path | None,
) -> TrainRow | SkippedRow:
    rid = str(raw_id) if raw_id not in (None, "") else f"row{index}"
    if not video:
        return SkippedRow(index, rid, "", "no video given")
    path = resolve_video(video, video_root)
    qtype = str(qtype or "mcq").lower()
    if qtype not in QUESTION_TYPES:
        return SkippedRow(
            index, rid, path, f"question_type {qtype!r} is not one of {list(QUESTION_TYPES)}"
        )
    if hasattr(options, "tolist"):
        options = options.tolist()
    if options is not None and not isinstance(options, list):
        return SkippedRow(index, rid, path, "options must be a list of strings or null")
    try:
        require_letterable(options, f"row {rid!r}")
    except TooManyOptionsError as e:
        return SkippedRow(index, rid, path, str(e))
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return SkippedRow(index, rid, path, "no answer given")
    if hasattr(answer, "tolist"):
        answer = answer.tolist()
    question = question.replace(VIDEO_MARKER, "").strip()
    if not question:
        return SkippedRow(index, rid, path, "empty question")
    return TrainRow(
        rid, path, question, [str(o) for o in options] if options else None, answer, qtype, index
    )


def _read_jsonl(path: Path, video_root) -> ReadResult:
    out = ReadResult()
    with path.open() as f:
        for i, line in enumerate(f):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if not isinstance(obj, dict):
                    raise ValueError("not a JSON object")  # noqa: TRY004 - caught below
            except ValueError as e:
                out.skipped.append(SkippedRow(i, f"row{i}", "", f"invalid JSON: {e}"))
                continue
            item = _normalise(
                i,
                obj.get("id"),
                obj.get("video"),
                str(obj.get("question") or ""),
                obj.get("options"),
                obj.get("answer"),
                obj.get("question_type"),
                video_root,
            )
            (out.rows if isinstance(item, TrainRow) else out.skipped).append(item)
    return out


def _read_parquet(path: Path, video_root) -> ReadResult:
    import pyarrow.parquet as pq

    table = pq.read_table(path).to_pylist()
    out = ReadResult()
    for i, rec in enumerate(table):
        prompt = rec.get("prompt") or []
        if isinstance(prompt, str):
            question = prompt
        else:
            users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
            question = _text_of(users[-1].get("content")) if users else ""
        extra = rec.get("extra_info") or {}
        if isinstance(extra, str):
            try:
                extra = json.loads(extra)
            except ValueError:
                extra = {}
        item = _normalise(
            i,
            extra.get("id", rec.get("id", extra.get("index"))),
            _video_of(rec.get("videos")),
            question,
            extra.get("options"),
            extra.get("answer"),
            extra.get("question_type"),
            video_root,
        )
        (out.rows if isinstance(item, TrainRow) else out.skipped).append(item)
    return out


def read_rows(
    path: str | Path, video_root: str | Path | None = None, fmt: str = "auto"
) -> ReadResult:
    """Parse a training file; bad rows land in ``skipped`` with a reason."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise UserError(
            f"training data not found: {p} (set data.path to a .parquet or .jsonl file)"
        )
    if fmt == "auto":
        fmt = "parquet" if p.suffix == ".parquet" else "jsonl"
    if fmt == "parquet":
        result = _read_parquet(p, video_root)
    elif fmt == "jsonl":
        result = _read_jsonl(p, video_root)
    else:
        raise UserError(f"data.format={fmt!r}: use auto, parquet or jsonl")
    ids = set()
    for row in result.rows:  # duplicate ids would merge groups' gating keys; make them unique
        if row.id in ids:
            row.id = f"{row.id}#{row.source_index}"
        ids.add(row.id)
    return result
