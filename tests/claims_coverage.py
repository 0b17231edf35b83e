"""How many of the docs' result numbers a claim recomputes from its raw file, and which not.

    python tests/claims_coverage.py              # the figure per doc and in all
    python tests/claims_coverage.py --uncovered  # and every number no claim covers, by line

A *result-like number* is a number written with a decimal point (``98.3``, ``0.15``, ``4.1e-7``),
a percent (``60%``) or an interval (``[7.5, 31.4]``, one number however many ends), in the prose
and tables of the docs in ``DOCS``. Not counted, by rule:

- fenced code blocks, inline code (``` `...` ```) and HTML comments: commands, literal strings,
  config keys and the markers below;
- a number glued to a word (``Qwen2.5-VL``, ``§5.4``) and a dotted version with two or more dots
  (``0.32.0``, ``127.0.0.1``);
- a heading's leading section number (``### 5.1 The reward``).

A number that is not a result is marked where it stands, by an HTML comment (it renders as
nothing) in the same block (the run of non-blank lines around it: a paragraph, a list, a table)::

    <!-- not results (setting): 0.3; 0.9; 1,024 -->

The kind is one of ``KINDS``; the numbers are written as in the text, ``;`` between them, and
each marks every occurrence of that number in the block. A marked number the block does not hold
is an error (a stale marker), and so is an unknown kind.

A number is *covered* when it (its digits: a sign before it or a ``%`` after it may be the
template's) lies inside text a claim recomputes from its raw file
(``claimkit.computed_spans``: each part a template fills in, or the claim's whole value inside its
quote); a number a template writes out itself is not. Coverage = covered / (counted - marked and not covered).
``tests/test_claims.py`` holds it at ``FLOOR``.
"""

from __future__ import annotations

import argparse
import bisect
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from claimkit import REPO, Claim, computed_spans  # noqa: E402

#: the docs whose result numbers must be recomputed: the toy guide and its lab log, the protocol,
#: the answer and reward rules, the vLLM guide and the front page
DOCS = (
    "experiments/toy_paradox/README.md",
    "experiments/toy_paradox/LOG.md",
    "docs/PROTOCOL.md",
    "docs/ANSWERS.md",
    "docs/train/REWARDS.md",
    "docs/train/VLLM.md",
    "README.md",
)
#: the share of the counted numbers that must be covered
FLOOR = 0.90
#: what a marked number is instead of a result
KINDS = {
    "setting": "an input chosen before a run: a hyper-parameter, a weight, a size, a bar to meet",
    "version": "a release, a format or a model version",
    "date": "a date or a time of day",
    "cited": "a number another source reports (the paper, the reference code, a library)",
    "example": "a value in a worked example of a rule, not a measurement",
}

_NUM = r"[-+−±]?\d[\d,]*(?:\.\d+)?%?"
#: an interval, or a number with a decimal point (and an exponent) or a percent sign; not glued
#: to a word, a section sign or another dotted part
TOKEN = re.compile(
    rf"\[\s*{_NUM}\s*,\s*{_NUM}\s*\]"
    r"|(?<![\w.§/#-])[-+−±]?\d[\d,]*(?:\.\d+(?:e[-+]?\d+)?%?|%)(?![\w%]|\.\d)"
)
_FENCE = re.compile(r"^ *```.*?^ *```[^\n]*$", re.DOTALL | re.MULTILINE)
_CODE = re.compile(r"`[^`\n]*`")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_HEADING_NUMBER = re.compile(r"^#{1,6} +(\d+(?:\.\d+)*)", re.MULTILINE)
MARKER = re.compile(r"<!--\s*not results?\s*\((\w+)\)\s*:(.*?)-->", re.DOTALL)


@dataclass
class Number:
    doc: str
    line: int
    text: str
    start: int
    end: int
    kind: str = ""  # a marker's kind, or "" for a result
    covered: bool = False

    def core(self) -> tuple[int, int]:
        """The offsets of the number itself: a sign before it or a ``%`` after it may be the
        template's (``{}%``), an interval is whole."""
        if self.text.startswith("["):
            return self.start, self.end
        lead = len(self.text) - len(self.text.lstrip("-+−±"))
        return self.start + lead, self.end - self.text.endswith("%")


@dataclass
class Report:
    numbers: list[Number] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def counted(self, doc: str | None = None) -> list[Number]:
        """The numbers that count: results, and marked ones a claim covers all the same."""
        return [n for n in self.numbers if (doc in (None, n.doc)) and (n.covered or not n.kind)]

    def share(self, doc: str | None = None) -> float:
        counted = self.counted(doc)
        return sum(n.covered for n in counted) / len(counted) if counted else 1.0


def _blank(text: str, pattern: re.Pattern) -> str:
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)


def visible(text: str) -> str:
    """The text with what is not counted blanked out (offsets kept)."""
    for pattern in (_FENCE, _COMMENT, _CODE):
        text = _blank(text, pattern)
    return _HEADING_NUMBER.sub(lambda m: m.group().replace(m.group(1), " " * len(m.group(1))), text)


def blocks(text: str) -> Iterable[tuple[int, int]]:
    """The offsets of each run of non-blank lines."""
    for m in re.finditer(r"(?:^[^\n]*\S[^\n]*(?:\n|$))+", text, re.MULTILINE):
        yield m.start(), m.end()


def numbers_of(doc: str, text: str) -> list[Number]:
    seen = visible(text)
    return [
        Number(doc, text.count("\n", 0, m.start()) + 1, m.group(), m.start(), m.end())
        for m in TOKEN.finditer(seen)
    ]


def _same(a: str, b: str) -> bool:
    return re.sub(r"\s+", "", a).replace("−", "-") == re.sub(r"\s+", "", b).replace("−", "-")


def mark(doc: str, text: str, numbers: list[Number]) -> list[str]:
    """Set each marked number's kind; the errors of the markers (unknown kind, stale number)."""
    errors = []
    for lo, hi in blocks(text):
        for m in MARKER.finditer(text, lo, hi):
            kind, listed = m.group(1), [x.strip() for x in m.group(2).split(";") if x.strip()]
            line = text.count("\n", 0, m.start()) + 1
            if kind not in KINDS:
                errors.append(f"{doc}:{line}: unknown kind {kind!r} (one of {sorted(KINDS)})")
                continue
            inside = [n for n in numbers if lo <= n.start < hi]
            for item in listed:
                hits = [n for n in inside if _same(n.text, item)]
                if not hits:
                    errors.append(f"{doc}:{line}: the marker lists {item!r}, not in its block")
                for n in hits:
                    n.kind = kind
    return errors


def cover(claims: Iterable[Claim], numbers: list[Number]) -> list[str]:
    """Mark the numbers inside each claim's recomputed text; a claim that fails is an error
    (``tests/test_claims.py`` says why)."""
    errors = []
    by_doc: dict[str, tuple[list[int], list[Number]]] = {}
    for n in sorted(numbers, key=lambda n: (n.doc, n.core())):
        starts, found = by_doc.setdefault(n.doc, ([], []))
        starts.append(n.core()[0])
        found.append(n)
    for claim in claims:
        if claim.doc not in DOCS:
            continue
        try:
            spans = computed_spans(claim)
        except AssertionError as e:
            errors.append(f"claim failed: {e}")
            continue
        mine = by_doc.get(claim.doc, ([], []))
        for lo, hi in spans:
            at = bisect.bisect_left(mine[0], lo)
            while at < len(mine[0]) and mine[0][at] < hi:
                n = mine[1][at]
                n.covered = n.covered or n.core()[1] <= hi
                at += 1
    return errors


def report(claims: Iterable[Claim], docs: Iterable[str] = DOCS) -> Report:
    out = Report()
    for doc in docs:
        text = (REPO / doc).read_text()
        found = numbers_of(doc, text)
        out.errors += mark(doc, text, found)
        out.numbers += found
    out.errors += cover(claims, out.numbers)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uncovered", action="store_true", help="list every uncovered number")
    args = ap.parse_args()
    from claims import CLAIMS

    r = report(CLAIMS)
    for doc in DOCS:
        counted = r.counted(doc)
        marked = sum(1 for n in r.numbers if n.doc == doc and n.kind and not n.covered)
        print(f"{doc}: {sum(n.covered for n in counted)} of {len(counted)} covered "
              f"({100 * r.share(doc):.1f}%), {marked} marked not results")  # fmt: skip
        if args.uncovered:
            for n in counted:
                if not n.covered:
                    print(f"  {doc}:{n.line}: {n.text}")
    counted = r.counted()
    print(f"all: {sum(n.covered for n in counted)} of {len(counted)} ({100 * r.share():.1f}%; "
          f"floor {100 * FLOOR:.0f}%)")  # fmt: skip
    for e in r.errors:
        print(f"error: {e}", file=sys.stderr)
    return 1 if r.errors or r.share() < FLOOR else 0


if __name__ == "__main__":
    raise SystemExit(main())
