"""The per-sample results file: one JSON object per line, appended and flushed per sample.

A run killed at any moment (SIGKILL included) leaves every finished sample on disk; at worst
the last line is torn. ``ResultsFile.open_for_append`` repairs that by cutting the file back to
its last complete line before appending, so a resumed run neither loses a finished sample nor
writes a duplicate. Reading tolerates nothing else: a malformed line in the middle is an error
naming the line, because that file was not written by an interrupted run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from paravt.errors import UserError


class ResultsFileError(UserError):
    """A results file that is not a run's JSON-lines output."""


def _complete_length(data: bytes) -> int:
    """Byte length up to and including the last newline (0 when there is none)."""
    cut = data.rfind(b"\n")
    return cut + 1 if cut >= 0 else 0


def read_results(path: str | Path, tolerate_torn_tail: bool = True) -> list[dict]:
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
        if not isinstance(obj, dict) or "id" not in obj:
            raise ResultsFileError(f"{path}:{lineno}: a result line needs an 'id'")
        out.append(obj)
    return out


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

    def append(self, result: dict) -> None:
        if self._fh is None:
            raise RuntimeError("ResultsFile.append before open_for_append")
        self._fh.write(json.dumps(result, ensure_ascii=False, default=str) + "\n")
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


def iter_unique(results: list[dict]) -> Iterator[dict]:
    """First result of each id, in order."""
    seen: set[str] = set()
    for r in results:
        if r["id"] in seen:
            continue
        seen.add(r["id"])
        yield r


def write_json_atomic(path: str | Path, obj) -> None:
    """Write JSON via a temporary file and a rename, so a reader never sees half a file."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)
