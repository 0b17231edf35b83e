"""The commands the docs print, read from their fenced blocks (shared by the docs tests).

``fenced_blocks(text)`` gives every fenced block (indented ones too) with its language and first
line; ``shell_commands(text)`` joins each block's ``\\`` continuations into one command per line
number, and leaves out blank lines and lines that are comments only.
"""

from __future__ import annotations

import re

FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


def fenced_blocks(text: str) -> list[tuple[str, int, str]]:
    """``(language, first line number, body)`` of every fenced block (indented ones too)."""
    out, lang, start, body = [], None, 0, []
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m and lang is None:
            lang, start, body = m.group(2) or "text", n + 1, []
        elif m and lang is not None:
            out.append((lang, start, "\n".join(body)))
            lang = None
        elif lang is not None:
            body.append(line)
    return out


def shell_commands(text: str, languages: tuple[str, ...] = ("bash", "sh", "text")):
    """``(line number, command)`` of every command in the blocks of ``languages``: continuation
    lines joined, blank and comment-only lines left out."""
    out = []
    for lang, start, body in fenced_blocks(text):
        if lang not in languages:
            continue
        joined, first = "", None
        for n, line in enumerate(body.splitlines(), start):
            stripped = line.strip()
            if not joined and (not stripped or stripped.startswith("#")):
                continue
            first = n if not joined else first
            joined += " " + stripped.rstrip("\\").strip()
            if stripped.endswith("\\"):
                continue
            out.append((first, joined.strip()))
            joined = ""
    return out
