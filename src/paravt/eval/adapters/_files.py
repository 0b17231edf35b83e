"""File helpers shared by the benchmark adapters: finding annotation files and reading rows
(locating videos and splitting ``A. text`` / ``(A) text`` option prefixes are
``paravt.data.questions``, shared with the other readers of questions).

Every failure names the file or folder that is missing or malformed and what the adapter
expected there, because the usual cause is a download unpacked into a different layout.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from paravt.errors import UserError

__all__: list[str] = []  # nothing here is for the other rooms


class AnnotationError(UserError):
    """An annotation file or folder is missing or not in the benchmark's native format."""


def require_dir(path: Path, what: str) -> Path:
    path = Path(path)
    if not path.is_dir():
        raise AnnotationError(f"{what}: folder not found: {path} (pass the folder that holds it)")
    return path


def find_file(folder: Path, candidates: Iterable[str], what: str, layout: str) -> Path:
    """The first of ``candidates`` (relative paths or glob patterns) that exists in ``folder``."""
    folder = Path(folder)
    if folder.is_file():
        return folder
    require_dir(folder, what)
    tried = []
    for pattern in candidates:
        tried.append(pattern)
        if any(ch in pattern for ch in "*?["):
            hits = sorted(p for p in folder.glob(pattern) if p.is_file())
            if hits:
                return hits[0]
        elif (folder / pattern).is_file():
            return folder / pattern
    raise AnnotationError(
        f"{what}: annotation file not found in {folder} (looked for {', '.join(tried)}); "
        f"expected layout: {layout}"
    )


def read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as e:
        raise AnnotationError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    except UnicodeDecodeError:
        raise AnnotationError(f"{path}: not UTF-8 text") from None


def read_jsonl(path: Path, skipped: list[tuple[str, str]] | None = None) -> list[tuple[int, Any]]:
    """``(line number, object)`` for each non-empty line. A line that is not JSON is a row
    like any other that cannot be used: with ``skipped`` it is left out and listed there
    (``("FILE:LINE", reason)``, as a row that is not a question is), else an error naming it."""
    rows = []
    with open(path, encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rows.append((lineno, json.loads(line)))
            except json.JSONDecodeError as e:
                if skipped is None:
                    raise AnnotationError(f"{path}:{lineno}: not a JSON object ({e.msg})") from None
                skipped.append((f"{Path(path).name}:{lineno}", f"not JSON ({e.msg})"))
    return rows


def read_rows(path: Path) -> list[dict]:
    """Rows of a parquet, JSON (list, or dict of lists) or JSON-lines file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            return pq.read_table(path).to_pylist()
        # a bad or missing file; anything else is a bug and keeps its own type and traceback
        except (pa.ArrowException, OSError) as e:
            raise AnnotationError(f"{path}: cannot read as parquet ({e})") from None
    if suffix == ".jsonl":
        return [row for _, row in read_jsonl(path)]
    data = read_json(path)
    if isinstance(data, dict):
        for key in ("data", "rows", "questions", "annotations"):
            if isinstance(data.get(key), list):
                return data[key]
        raise AnnotationError(f"{path}: expected a JSON list of rows")
    if not isinstance(data, list):
        raise AnnotationError(f"{path}: expected a JSON list of rows")
    return data


def normalise_text(text: str) -> str:
    """Lower-case, collapse whitespace, drop a trailing full stop (for matching answer texts)."""
    out = " ".join(str(text).split()).lower()
    return out.rstrip(" .")


def in_file_order(skipped: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``("FILE:LINE", reason)`` pairs by line (lines that are not JSON are found first)."""
    return sorted(skipped, key=lambda item: int(item[0].rsplit(":", 1)[1]))
