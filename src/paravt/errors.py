"""The error hierarchy every room raises from.

``UserError`` marks a problem with the user's input (a path, a flag, a config key); the CLI prints
its message as one line and exits 2. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import warnings

__all__ = [
    "ConfigError",
    "Interrupted",
    "ItemsFailedError",
    "ParavtDeprecationWarning",
    "ParavtError",
    "RankFailedError",
    "UserError",
    "deprecated",
]


class ParavtError(Exception):
    """Base class of all paravt errors."""


class UserError(ParavtError):
    """Bad input from the user: the message names the input and says how to fix it."""


class ConfigError(UserError):
    """A config file or a ``--set`` override that does not fit the command's config dataclass."""


class RankFailedError(ParavtError):
    """Another rank of a multi-process run failed: raised on every other rank at the next
    handshake of the rollout (``paravt.rollout.lockstep``), instead of waiting in a collective
    until the process group times out. ``rank``, ``kind`` and ``message`` name that rank's
    error; its own traceback is in that rank's log."""

    def __init__(self, rank: int, kind: str, message: str):
        super().__init__(
            f"rank {rank} failed during the rollout with {kind}: {message} (its traceback is in "
            f"rank {rank}'s log; this rank stopped at the next handshake)"
        )
        self.rank, self.kind, self.message = rank, kind, message


class ItemsFailedError(ParavtError):
    """The command ran, but some of its items (questions of a batch, samples) have no result:
    their errors are in the command's output. The CLI prints this one line and exits 1; bad
    input found before anything ran is a ``UserError`` (exit 2)."""


class Interrupted(ParavtError):
    """Ctrl-C stopped a command that keeps its work on disk. ``kept`` says what is there (the
    scored questions, the newest checkpoint, or that there is nothing); the CLI prints it with
    the command that continues: the same command line with the flags ``add`` (``--resume``) and
    without ``drop`` (exit 130)."""

    def __init__(self, kept: str, add: tuple[str, ...] = ("--resume",), drop: tuple[str, ...] = ()):
        super().__init__(kept)
        self.kept, self.add, self.drop = kept, add, drop


class ParavtDeprecationWarning(FutureWarning):
    """A name or key that paravt removes in a named release. TRL's rule: a ``FutureWarning``
    (shown to users by default, unlike a ``DeprecationWarning``) whose message names the
    release; ``deprecated`` writes every one of them."""


def deprecated(old: str, use: str, release: str = "0.2", stacklevel: int = 3) -> None:
    """Warn that ``old`` is deprecated and will be removed in paravt ``release``; ``use`` says
    what to do instead (``"use paravt.schema.ToolCounts"``). ``stacklevel`` counts from the
    caller of this function (3: the code that used the old name, two frames above)."""
    warnings.warn(
        f"{old} is deprecated and will be removed in paravt {release}: {use}",
        ParavtDeprecationWarning,
        stacklevel=stacklevel,
    )
