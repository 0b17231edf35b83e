"""Video paths confined to the roots given at start.

Why here and strict: over MCP the ``video_path`` argument comes from a model or a harness, so it
is untrusted text. A path is refused, before anything is opened, when it is empty, holds a NUL,
has a ``..`` component (even one that would land inside a root: the rule is simpler to trust
than a normalisation), is absolute outside every root, or resolves (symlinks followed, with
``os.path.realpath``, which reads links but opens nothing) to a place outside every root. Only
``stat`` touches the target before it is accepted. The decoder is then given the resolved real
path, so a link swapped after the check cannot redirect it.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from paravt.errors import UserError

__all__ = ["VideoRoots"]


class PathRefused(Exception):
    """A ``video_path`` the server will not open; ``kind`` names the rule, the message the fix."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class VideoRoots:
    """The folders videos may come from, as real absolute paths."""

    roots: tuple[str, ...]

    @classmethod
    def of(cls, folders: list[str]) -> VideoRoots:
        if not folders:
            raise UserError(
                "serve-tools needs at least one --video-root DIR (videos come from there)"
            )
        real = []
        for f in folders:
            p = os.path.realpath(os.path.expanduser(str(f)))
            if not os.path.isdir(p):
                raise UserError(f"--video-root {f}: not a folder")
            real.append(p)
        return cls(tuple(real))

    def _inside(self, real: str) -> bool:
        return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in self.roots)

    def resolve(self, requested: object) -> str:
        """The real path of the video ``requested`` names, or ``PathRefused`` saying why not."""
        if not isinstance(requested, str) or not requested.strip():
            raise PathRefused(
                "bad_path", f"video_path={requested!r}: give the path of a video file as a string"
            )
        if "\x00" in requested:
            raise PathRefused("bad_path", "video_path holds a NUL character")
        path = Path(requested)
        if ".." in path.parts:
            raise PathRefused(
                "path_dotdot",
                f"video_path={requested!r}: '..' is not allowed; give a path under one of the "
                f"video roots ({self.describe()})",
            )
        candidates = [path] if path.is_absolute() else [Path(r) / path for r in self.roots]
        outside = None
        for cand in candidates:
            real = os.path.realpath(cand)
            if not self._inside(real):
                outside = real
                continue
            try:
                st = os.stat(real)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                raise PathRefused("not_a_file", f"video_path={requested!r} is not a regular file")
            return real
        if outside is not None:
            raise PathRefused(
                "path_outside_roots",
                f"video_path={requested!r} is outside the video roots ({self.describe()}); "
                "the server opens only files under them",
            )
        raise PathRefused(
            "video_missing",
            f"video_path={requested!r}: no such file under the video roots ({self.describe()})",
        )

    def describe(self) -> str:
        return ", ".join(self.roots)
