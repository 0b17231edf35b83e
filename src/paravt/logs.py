"""How paravt's log records reach a person: one line each on stderr, the traceback only on demand.

Why: a room that isolates one failure (a video the decoder refuses, a lane that fails) logs it
with its traceback so that a bug can be told from bad input. Printed as Python's last-resort
handler prints it, a corrupt file put 20 lines of torchcodec internals between a command's
lines, even when the command then succeeded. ``paravt --debug`` keeps the whole traceback.
"""

from __future__ import annotations

import logging
import sys
import warnings

from paravt.errors import ParavtDeprecationWarning

__all__ = ["one_line_logging"]

#: the package's logger: every room's ``logging.getLogger(__name__)`` is below it
ROOT = "paravt"


class OneLineFormatter(logging.Formatter):
    """``paravt: warning: MESSAGE (ExcType: its first line)``; with ``debug`` the traceback
    follows, as logging's own formatter writes it."""

    def __init__(self, debug: bool = False):
        super().__init__()
        self.debug = debug

    def format(self, record: logging.LogRecord) -> str:
        text = f"paravt: {record.levelname.lower()}: {record.getMessage()}"
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None and not self.debug:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            return f"{text} ({type(exc).__name__}{': ' + first if first else ''})"
        if record.exc_info and self.debug:
            return f"{text}\n{self.formatException(record.exc_info)}"
        return text


class _Stderr(logging.StreamHandler):
    """Writes to the ``sys.stderr`` of the moment (a test's capture, a redirect), as logging's
    last-resort handler does."""

    def __init__(self):
        super().__init__()

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:  # StreamHandler.__init__ assigns it
        pass


#: the ``warnings.showwarning`` that was there before ``one_line_logging`` (Python's own, or
#: ``logging.captureWarnings``'s): every warning but paravt's deprecations keeps it
_show_others = warnings.showwarning


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """paravt's deprecations as one line (``paravt: warning: ...``: the message names the old
    name, the release that removes it and what to use); every other warning as before."""
    if issubclass(category, ParavtDeprecationWarning):
        (file or sys.stderr).write(f"paravt: warning: {message}\n")
        return
    _show_others(message, category, filename, lineno, file, line)


def one_line_logging(debug: bool = False, level: int = logging.WARNING) -> logging.Handler:
    """Route the ``paravt`` loggers to one line per record on stderr (installed once: a second
    call replaces the first's handler), and show paravt's deprecation warnings as one line too.
    Records still propagate, so a handler the caller put on the root logger (pytest's capture)
    sees them too; with none there, nothing prints twice."""
    global _show_others
    if warnings.showwarning is not _show_warning:
        _show_others, warnings.showwarning = warnings.showwarning, _show_warning
    logger = logging.getLogger(ROOT)
    for old in [h for h in logger.handlers if isinstance(h, _Stderr)]:
        logger.removeHandler(old)
    handler = _Stderr()
    handler.setFormatter(OneLineFormatter(debug))
    handler.setLevel(level)
    logger.addHandler(handler)
    if logger.level == logging.NOTSET or logger.level > level:
        logger.setLevel(level)
    return handler
