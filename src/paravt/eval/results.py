"""The per-sample result row and its file: one JSON object per line, appended and flushed per sample.

``ResultRow`` is the one shape of a result: the runner builds it, ``ResultsFile`` and
``write_results`` are the only writers of results files and ``read_results`` the only reader.
A row is a dataclass rather than a TypedDict because files written by older versions lack fields
(no ``attempted`` call count, no per-variant ``scores``): ``ResultRow.from_dict`` fills them once,
here, so every reader gets every field and none needs a ``.get(..., default)`` of its own. Keys a
row does not know are kept in ``extra`` and written back, so rewriting a file loses nothing.
``score``, ``scores`` and ``sample`` stay plain dicts: their keys depend on the question type (a
letter and ``correct``, a span and ``iou``, a judge's verdict) and the sample is
``EvalSample.to_dict()``.

A run killed at any moment (SIGKILL included) leaves every finished sample on disk; at worst
the last line is torn. ``ResultsFile.open_for_append`` repairs that by cutting the file back to
its last complete line before appending, so a resumed run neither loses a finished sample nor
writes a duplicate. Reading tolerates nothing else: a malformed line in the middle is an error
naming the line, because that file was not written by an interrupted run.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from paravt.errors import UserError
from paravt.schema.tools import ToolCounts

__all__ = ["ResultRow", "write_json_atomic"]


class ResultsFileError(UserError):
    """A results file that is not a run's JSON-lines output."""


@dataclass
class ToolUsage:
    """One sample's tool calls as a results line shows them: a view of the episode's
    ``ToolCounts`` (``executed`` ran, ``parseable`` got a tool response, ``malformed`` did not
    parse, ``tool_errors`` failed), with ``attempted`` (every call that parsed, whatever became
    of it) and the model's ``turns``. The counts are the engine's record itself, not a copy
    under other names; ``to_dict`` writes the results file's field names."""

    counts: ToolCounts = field(default_factory=ToolCounts)
    attempted: int = 0
    turns: int = 0

    @property
    def executed(self) -> int:
        return self.counts.executed_ok

    @property
    def parseable(self) -> int:
        return self.counts.parseable_calls

    @property
    def malformed(self) -> int:
        return self.counts.parse_errors

    @property
    def tool_errors(self) -> int:
        return self.counts.errors

    def to_dict(self) -> dict[str, int]:
        """The results line's ``tools`` object (its field names since the first results file)."""
        return {
            "executed": self.executed, "attempted": self.attempted, "parseable": self.parseable,
            "malformed": self.malformed, "tool_errors": self.tool_errors, "turns": self.turns,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict) -> ToolUsage:
        def num(key: str) -> int:
            return int(data.get(key) or 0)

        counts = ToolCounts(
            parseable_calls=num("parseable"), executed_ok=num("executed"),
            errors=num("tool_errors"), parse_errors=num("malformed"),
        )  # fmt: skip
        # lines before the field: parseable calls stand in for the attempted ones
        attempted = num("parseable") if data.get("attempted") is None else num("attempted")
        return cls(counts, attempted, num("turns"))


@dataclass
class ResultError:
    """Why a sample has no usable answer: ``kind`` for summaries, ``message`` for people."""

    kind: str
    message: str = ""


#: the keys a results line has, in the order they are written (``extra`` keys follow them)
_KEYS = (
    "id", "index", "split", "status", "prediction", "answer_text", "error", "forced", "tools",
    "overview_times", "timing_s", "subtitles", "warnings", "score", "scores", "sample",
)  # fmt: skip


@dataclass
class ResultRow:
    """One sample's result line (see the module docstring)."""

    id: str
    index: int = 0
    split: str = ""
    prediction: str | None = None  # the raw final turn
    answer_text: str | None = None  # the answer the engine extracted (None on error)
    error: ResultError | None = None
    forced: bool = False
    tools: ToolUsage = field(default_factory=ToolUsage)
    overview_times: list[float] = field(default_factory=list)
    timing_s: float = 0.0
    subtitles: dict | None = None  # Video-MME with subtitles only
    #: the episode's warnings (the video's damage, frames that could not be decoded, ...):
    #: the record's own, then each call's as ``call T.I: ...``
    warnings: list[str] = field(default_factory=list)
    score: dict = field(default_factory=dict)  # the robust reading
    scores: dict = field(default_factory=dict)  # variant -> score, beside the robust one
    sample: dict = field(default_factory=dict)  # EvalSample.to_dict()
    extra: dict = field(default_factory=dict)  # keys this version does not know, kept

    @property
    def status(self) -> str:
        return "error" if self.error is not None else "ok"

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def question_type(self) -> str | None:
        return self.sample.get("question_type")

    @classmethod
    def failed(
        cls, sample_id: str, index: int, split: str, kind: str, message: str, sample: dict
    ) -> ResultRow:
        """The row of a sample that produced no usable episode (scored 0, kept in the
        denominator): a missing video, an unusable annotation, a crash, a shard never run."""
        return cls(sample_id, index, split, error=ResultError(kind, message), sample=sample)

    def score_for(self, variant: str) -> dict:
        """The score under ``variant``; ``score`` is the robust one, and every variant reads it
        on a line written before the variants were stored."""
        if variant != "robust" and variant in self.scores:
            return self.scores[variant]
        return self.score

    def to_dict(self) -> dict:
        out: dict[str, Any] = {
            "id": self.id,
            "index": self.index,
            "split": self.split,
            "status": self.status,
            "prediction": self.prediction,
            "answer_text": self.answer_text,
            "error": None if self.error is None else dataclasses.asdict(self.error),
            "forced": self.forced,
            "tools": self.tools.to_dict(),
            "overview_times": list(self.overview_times),
            "timing_s": self.timing_s,
        }
        if self.subtitles is not None:
            out["subtitles"] = self.subtitles
        if self.warnings:
            out["warnings"] = list(self.warnings)
        out.update(score=self.score, scores=self.scores, sample=self.sample)
        out.update({k: v for k, v in self.extra.items() if k not in out})
        return out

    @classmethod
    def from_dict(cls, data: dict) -> ResultRow:
        """A row from one line of any version's results file (missing fields get their
        defaults; a line whose ``status`` is not ``ok`` is an error even without one)."""
        if "id" not in data:
            raise ValueError("a result line needs an 'id'")
        error = data.get("error")
        if error:
            error = ResultError(
                str(error.get("kind") or "unknown"), str(error.get("message") or "")
            )
        elif data.get("status", "ok") != "ok":
            error = ResultError("unknown", "")
        return cls(
            id=str(data["id"]),
            index=int(data.get("index") or 0),
            split=str(data.get("split") or ""),
            prediction=data.get("prediction"),
            answer_text=data.get("answer_text"),
            error=error or None,
            forced=bool(data.get("forced", False)),
            tools=ToolUsage.from_dict(data.get("tools") or {}),
            overview_times=[float(t) for t in data.get("overview_times") or []],
            timing_s=float(data.get("timing_s") or 0.0),
            subtitles=data.get("subtitles"),
            warnings=[str(w) for w in data.get("warnings") or []],
            score=dict(data.get("score") or {}),
            scores=dict(data.get("scores") or {}),
            sample=dict(data.get("sample") or {}),
            extra={k: v for k, v in data.items() if k not in _KEYS},
        )


def _line(row: ResultRow | dict) -> str:
    """The one serialisation of a row, used by both writers (a dict: an ``episodes.jsonl``
    line, written by the same append-only writer)."""
    data = row.to_dict() if isinstance(row, ResultRow) else row
    return json.dumps(data, ensure_ascii=False, default=str) + "\n"


def _complete_length(data: bytes) -> int:
    """Byte length up to and including the last newline (0 when there is none)."""
    cut = data.rfind(b"\n")
    return cut + 1 if cut >= 0 else 0


def read_results(path: str | Path, tolerate_torn_tail: bool = True) -> list[ResultRow]:
    """Every complete result of ``path`` in file order.

    A torn last line (an interrupted write) is ignored when ``tolerate_torn_tail``; any other
    malformed line is an error naming it.
    """
    path = Path(path)
    if not path.is_file():
        raise ResultsFileError(f"results file not found: {path}")
    lines = path.read_bytes().decode("utf-8", errors="replace").split("\n")
    out = []
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            if tolerate_torn_tail and lineno == len(lines):
                continue
            raise ResultsFileError(f"{path}:{lineno}: not a JSON result line") from None
        if not isinstance(obj, dict):
            raise ResultsFileError(f"{path}:{lineno}: a result line is a JSON object")
        try:
            out.append(ResultRow.from_dict(obj))
        except (ValueError, TypeError, AttributeError) as e:
            raise ResultsFileError(f"{path}:{lineno}: not a result line ({e})") from None
    return out


def write_results(path: str | Path, rows: Iterable[ResultRow]) -> None:
    """Write a whole results file atomically (beside it, then renamed): a kill during the write
    leaves the old file or the new one, never a mix."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(_line(r) for r in rows)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


class ResultsFile:
    """Append-only writer of results, one flushed line per sample."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._fh = None

    def repair(self) -> int:
        """Cut a torn last line; returns how many bytes were dropped."""
        if not self.path.exists():
            return 0
        data = self.path.read_bytes()
        keep = _complete_length(data)
        # a final line without its newline may still be a complete JSON object
        tail = data[keep:]
        if tail.strip():
            try:
                json.loads(tail)
                with open(self.path, "ab") as fh:
                    fh.write(b"\n")
                return 0
            except json.JSONDecodeError:
                pass
        if keep < len(data):
            with open(self.path, "r+b") as fh:
                fh.truncate(keep)
        return len(data) - keep

    def open_for_append(self) -> ResultsFile:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.repair()
        self._fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - held until close()
        return self

    def append(self, row: ResultRow | dict) -> None:
        if self._fh is None:
            raise RuntimeError("ResultsFile.append before open_for_append")
        self._fh.write(_line(row))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> ResultsFile:
        return self.open_for_append()

    def __exit__(self, *exc) -> None:
        self.close()


def iter_unique(results: Iterable[ResultRow]) -> Iterator[ResultRow]:
    """First result of each id, in order."""
    seen: set[str] = set()
    for r in results:
        if r.id in seen:
            continue
        seen.add(r.id)
        yield r


def write_json_atomic(path: str | Path, obj) -> None:
    """Write JSON via a temporary file and a rename, so a reader never sees half a file."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)
