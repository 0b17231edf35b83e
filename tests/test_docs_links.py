"""The guides stay guides, and their links resolve.

Why: docs/TRAIN.md grew to 1,487 lines of guide, measurements and run logs; it is now an entry
guide with its topics in docs/train/, and moving sections breaks links silently. This test
reads the Markdown as text (about a second) and fails on

- docs/TRAIN.md over ``TRAIN_MD_MAX_LINES`` lines (measurements belong in docs/TESTING.md and
  benchmarks/README.md, topics in docs/train/);
- a relative link in README.md, docs/**/*.md, benchmarks/README.md or an experiment's README or
  lab log (LOG.md) whose file does not exist, or whose ``#anchor`` is no heading of the Markdown
  file it names (GitHub's slugs: lower case, punctuation other than ``-`` and ``_`` dropped,
  spaces to ``-``, repeats numbered ``-1``, ``-2``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TRAIN_MD_MAX_LINES = 500
#: the pages whose links are checked
PAGES = sorted(
    ["README.md", "benchmarks/README.md"]
    + [p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md")]
    + [p.relative_to(REPO).as_posix() for p in (REPO / "experiments").rglob("README.md")]
    + [p.relative_to(REPO).as_posix() for p in (REPO / "experiments").rglob("LOG.md")]
)

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _prose(text: str) -> list[str]:
    """The lines outside fenced blocks."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        out.append("" if fenced or FENCE.match(line) else line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(path.read_text()):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(text: str) -> list[tuple[int, str]]:
    """``(line number, target)`` of every inline link outside code."""
    out = []
    for number, line in enumerate(_prose(text), 1):
        for m in LINK.finditer(INLINE_CODE.sub("", line)):
            out.append((number, m.group(1)))
    return out


def test_train_md_is_a_guide_not_a_log():
    lines = len((REPO / "docs" / "TRAIN.md").read_text().splitlines())
    assert lines <= TRAIN_MD_MAX_LINES, (
        f"docs/TRAIN.md has {lines} lines (at most {TRAIN_MD_MAX_LINES}): move a topic to "
        "docs/train/, measurements to docs/TESTING.md or benchmarks/README.md"
    )


@pytest.mark.parametrize("page", PAGES)
def test_every_relative_link_resolves(page):
    doc = REPO / page
    bad = []
    for number, target in links(doc.read_text()):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        name, _, anchor = target.partition("#")
        linked = (doc.parent / name).resolve() if name else doc
        if not linked.exists():
            bad.append(f"{page}:{number}: {target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            bad.append(f"{page}:{number}: {target} (no such heading)")
    assert not bad, "broken links:\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "heading, expected",
    [
        ("Cold start: `paravt sft`", "cold-start-paravt-sft"),
        ("Multi-GPU: the memory plan and the recipes that fit",
         "multi-gpu-the-memory-plan-and-the-recipes-that-fit"),
        ("`bench_sft_step.py`: one SFT step of the toy model",
         "bench_sft_steppy-one-sft-step-of-the-toy-model"),
        ("Under the reader as it was (`results/rl-lenient-reader/`)",
         "under-the-reader-as-it-was-resultsrl-lenient-reader"),
        ("When a rank fails: what was measured", "when-a-rank-fails-what-was-measured"),
    ],
)  # fmt: skip
def test_slug(heading, expected):
    assert slug(heading) == expected


def test_the_checker_finds_a_broken_anchor(tmp_path):
    (tmp_path / "a.md").write_text("# Title\n\n## Part one\n\n## Part one\n")
    found = anchors(tmp_path / "a.md")
    assert found == {"title", "part-one", "part-one-1"}
    text = "[x](a.md#part-one) `[y](a.md#no)`\n```\n[z](nowhere.md)\n```\n[w](a.md#gone)\n"
    assert links(text) == [(1, "a.md#part-one"), (5, "a.md#gone")]
