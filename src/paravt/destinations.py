"""Where a command writes, checked before anything heavy runs.

Why: ``paravt infer --sheet /proc/ep.png`` ran the whole episode and then ended in ``internal
error: FileNotFoundError`` (exit 1); ``train`` and ``sft`` with ``output_dir=/proc/run`` did the
same after their start. Permission bits do not say whether a file can be made there (root passes
every ``os.access`` check, and ``/proc`` refuses every new file), so the check makes one: an
empty scratch file in the nearest folder that exists, removed at once. A destination that cannot
be written is a ``UserError`` naming the flag, the path and the fix (exit 2), before any model
or video is opened.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from paravt.errors import UserError

__all__ = ["check_file_destination", "check_folder_destination"]


def _nearest_existing(path: Path) -> Path:
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return probe


def _cannot_create_in(folder: Path) -> str | None:
    """Why no file can be made in ``folder`` (an existing path), or None when one can."""
    if not folder.is_dir():
        return f"cannot write in {folder}: it is a file, not a folder"
    try:
        fd, name = tempfile.mkstemp(prefix=".paravt-write-check-", dir=folder)
    except OSError as e:
        return f"cannot write in {folder} ({e.strerror or type(e).__name__})"
    os.close(fd)
    os.unlink(name)
    return None


def check_folder_destination(path: str | Path, flag: str) -> Path:
    """``path`` as a folder a command can create (if needed) and write files into; ``flag``
    names the input in the error (``--out``, ``output_dir=``)."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{flag}{folder} is a file; give a folder path")
    why = _cannot_create_in(_nearest_existing(folder))
    if why is not None:
        raise UserError(f"{flag}{folder}: {why}; choose a writable folder")
    return folder


def check_file_destination(path: str | Path, flag: str) -> Path:
    """``path`` as a file a command can write (its folder made if needed): not a folder, not a
    read-only file, in a folder where files can be made."""
    out = Path(path)
    if out.is_dir():
        raise UserError(f"{flag}{out} is a folder; give a file name in it")
    parent = out.parent if str(out.parent) else Path(".")
    why = _cannot_create_in(_nearest_existing(parent))
    if why is not None:
        raise UserError(f"{flag}{out}: {why}; choose a writable folder")
    if out.exists() and not os.access(out, os.W_OK):
        raise UserError(f"{flag}{out}: the file exists and is read-only")
    return out
