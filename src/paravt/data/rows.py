"""Read training rows from a ParaVT-style parquet file or a JSON-lines file.

JSON lines: one question object a line, read by ``paravt.data.questions.parse_question`` (the
fields and defaults ``infer`` and ``eval --benchmark jsonl`` read too). Parquet (the ParaVT
release layout): ``prompt`` is a list of chat messages whose user text holds a ``<video>``
marker, ``videos`` lists the video (a path, or a dict with ``video``/``path``), and
``extra_info`` holds ``answer`` and ``question_type`` (optionally ``options`` and ``id``); each
row becomes the same question object first. Relative videos are resolved under the video root.
A row that cannot be trained on (no question, no video, no usable gold, bad options) is skipped
with its reason, never fatal; a row without an id is ``row<N>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paravt.data.questions import RowError, parse_question, resolve_video
from paravt.errors import UserError
from paravt.schema.questions import TooManyOptionsError, require_letterable

__all__ = ["read_rows"]


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

    def add(self, item: TrainRow | SkippedRow) -> None:
        if isinstance(item, TrainRow):
            self.rows.append(item)
        else:
            self.skipped.append(item)


def _video_of(videos: Any) -> str | None:
    if hasattr(videos, "tolist"):
        videos = videos.tolist()
    if isinstance(videos, (list, tuple)):
        videos = videos[0] if len(videos) else None
    if isinstance(videos, dict):
        videos = videos.get("video") or videos.get("path")
    return str(videos) if videos else None


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


def _row(index: int, obj: Any, video_root: str | Path | None) -> TrainRow | SkippedRow:
    """One training row from one question object (``parse_question``: the defaults every
    reader shares); a row that cannot be trained on is skipped with its reason."""
    rid = str(obj["id"]) if isinstance(obj, dict) and obj.get("id") not in (None, "") else None
    rid = rid or f"row{index}"
    try:
        q = parse_question(obj)
    except RowError as e:
        video = obj.get("video") if isinstance(obj, dict) else None
        path = str(resolve_video(video_root, video)) if video else ""
        return SkippedRow(index, rid, path, str(e))
    if not q.video:
        return SkippedRow(index, rid, "", "no video given")
    path = str(resolve_video(video_root, q.video))
    try:
        require_letterable(q.options, f"row {rid!r}")
    except TooManyOptionsError as e:
        return SkippedRow(index, rid, path, str(e))
    if q.problem is not None:  # no gold to score the episodes against
        return SkippedRow(index, rid, path, q.problem)
    return TrainRow(rid, path, q.question, q.options, q.answer, q.question_type, index)


def _read_jsonl(path: Path, video_root) -> ReadResult:
    out = ReadResult()
    with path.open() as f:
        for i, line in enumerate(f):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except ValueError as e:
                out.skipped.append(SkippedRow(i, f"row{i}", "", f"invalid JSON: {e}"))
                continue
            item = _row(i, obj, video_root)
            out.add(item)
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
        obj = {
            "id": extra.get("id", rec.get("id", extra.get("index"))),
            "video": _video_of(rec.get("videos")),
            "question": question,
            "options": _plain(extra.get("options")),
            "answer": _plain(extra.get("answer")),
            "question_type": extra.get("question_type"),
        }
        item = _row(i, obj, video_root)
        out.add(item)
    return out


def _plain(value: Any) -> Any:
    """A parquet cell as plain Python (an array read as a list)."""
    return value.tolist() if hasattr(value, "tolist") else value


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
