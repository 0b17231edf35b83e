"""The commands the docs print, read from their fenced blocks (shared by the docs tests).

``fenced_blocks(text)`` gives every fenced block (indented ones too) with its language and first
line; ``shell_commands(text)`` joins each block's ``\\`` continuations into one command per line
number, and leaves out blank lines and lines that are comments only. ``shown_outputs(text)`` gives
each command whose output the doc shows in the block right after it, and
``output_differences(shown, printed)`` compares the two under the masking rule of
docs/TESTING.md, "Output the docs show".
"""

from __future__ import annotations

import difflib
import itertools
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


#: a fenced block of one of these languages (none is ``text``) right after a command's block
#: shows that command's output (docs/TESTING.md, "Output the docs show")
OUTPUT_LANGUAGES = ("text", "console", "output")
#: what stands, in an output a doc shows, for a part that differs from run to run
PLACEHOLDERS = {
    "<<n>>": r"-?[\d,]+(?:\.\d+)?",  # a number: a time, a size, a count
    "<<path>>": r"\S+",  # a path (any word without blanks)
    "<<...>>": r".*",  # the rest of the line, whatever it is
}
_PLACEHOLDER = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


def _fence_lines(text: str) -> list[tuple[str, int, int]]:
    """``(language, opening line, closing line)`` of every fenced block, 1-based."""
    out, lang, start = [], None, 0
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m and lang is None:
            lang, start = m.group(2) or "text", n
        elif m and lang is not None:
            out.append((lang, start, n))
            lang = None
    return out


def shown_outputs(text: str) -> list[tuple[int, str, str]]:
    """``(line number, command, output shown)`` of every ``bash`` block followed, with only
    blank lines between, by a block of ``OUTPUT_LANGUAGES``. Such a command block holds one
    command (a ``ValueError`` names one that holds more)."""
    lines = text.splitlines()
    fences = _fence_lines(text)
    out = []
    for (lang, start, end), (next_lang, next_start, next_end) in itertools.pairwise(fences):
        between = lines[end : next_start - 1]
        if (
            lang not in ("bash", "sh")
            or next_lang not in OUTPUT_LANGUAGES
            or any(ln.strip() for ln in between)
        ):
            continue
        block = "```bash\n" + "\n".join(lines[start : end - 1]) + "\n```"
        commands = shell_commands(block, ("bash",))
        if len(commands) != 1:
            raise ValueError(
                f"line {start}: a block whose output the doc shows holds one command, not "
                f"{len(commands)}"
            )
        out.append(
            (
                start + commands[0][0] - 1,
                commands[0][1],
                "\n".join(lines[next_start : next_end - 1]),
            )
        )
    return out


def _trimmed(text: str) -> list[str]:
    lines = [ln.rstrip() for ln in text.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _line_pattern(shown: str) -> re.Pattern:
    parts, pos = [], 0
    for m in _PLACEHOLDER.finditer(shown):
        parts += [re.escape(shown[pos : m.start()]), PLACEHOLDERS[m.group(0)]]
        pos = m.end()
    parts.append(re.escape(shown[pos:]))
    return re.compile("".join(parts))


def output_differences(shown: str, printed: str) -> list[str]:
    """Where ``printed`` (a command's stdout) differs from the output a doc ``shown``: line by
    line, trailing blanks and blank first and last lines left out, ``PLACEHOLDERS`` matching
    what they stand for. Empty when they agree."""
    want, got = _trimmed(shown), _trimmed(printed)
    if len(want) != len(got):  # lines added or left out: the diff says where
        diff = difflib.unified_diff(want, got, "the doc shows", "the command printed", n=0)
        return [f"the doc shows {len(want)} lines, the command printed {len(got)}", *diff]
    return [
        f"line {n}: the doc shows {w!r}, the command printed {g!r}"
        for n, (w, g) in enumerate(zip(want, got, strict=True), 1)
        if not _line_pattern(w).fullmatch(g)
    ]
