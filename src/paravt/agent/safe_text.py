"""Model, dataset and file-name text made safe to show: control characters become visible.

Why: a model's text (or a question, or a file name) is data, and a terminal treats some data as
commands: ``\\x1b[`` starts an ANSI escape sequence (colours, cursor moves, even a window
title), ``\\x12`` and the other C0/C1 controls can garble or rewrite what is on screen, and the
bidirectional overrides (U+202A-U+202E, U+2066-U+2069) reorder what a person reads. Every such
character is shown as its escape (``\\x1b``, ``\\u202e``), so the text is displayed, never run.
"""

from __future__ import annotations

import re

__all__ = ["visible"]

#: C0 controls, DEL, C1 controls, and the bidirectional embeddings, overrides and isolates.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    c = ord(m.group(0))
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def visible(text: object, keep_lines: bool = False) -> str:
    """``text`` as a string with every control character shown as its escape; ``keep_lines``
    leaves newlines and tabs as they are (for multi-line text shown as such)."""
    pattern = _UNSAFE_BUT_LINES if keep_lines else _UNSAFE
    return pattern.sub(_escape, str(text))
