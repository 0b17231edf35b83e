"""The machinery of the claims (``tests/claims.py``): what a claim is, how its doc text is found,
and the readers a claim reads its raw files through.

A claim ties a number the docs quote to the raw run file it comes from (an eval's
``summary.json`` or ``answers.json``, a trainer's ``metrics.jsonl``, a runner's ``results.json``,
a probe's own measurement) and recomputes it. The tables a probe derives from those files
(``paradox_table.json``, ``spread.json``, ...) are not read: a rounding in a derived table once
let "99.5, sd 1.3" pass where the raw files give 99.4, sd 1.4. The readers refuse them.

Text is found with its whitespace collapsed and its ``**`` emphasis dropped (a table row or a
sentence is the same claim bold or not, wrapped or not), in the whole doc or, with ``within``,
in the section under one heading: the quote, not a line number, keys a claim, so it survives the
doc being reordered or split.
"""

from __future__ import annotations

import difflib
import errno
import functools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOY = "experiments/toy_paradox/results"


@dataclass(frozen=True)
class Claim:
    """``quote`` is found in ``doc`` (in the section ``within`` heads, when given) and
    ``compute(REPO / source)`` is text found in ``quote``. ``quote`` None: the computed text
    itself must be in the doc (a table row, computed whole)."""

    doc: str
    quote: str | None
    source: str
    compute: Callable[[Path], str]
    within: str | None = None


def said(doc: str, source: str, compute: Callable[[Path], str], within: str | None = None):
    """A claim whose computed text is its quote (a row or a sentence the file gives whole)."""
    return Claim(doc, None, source, compute, within)


# --------------------------------------------------------------------------- raw files only

#: the tables the probes derive from committed files: paradox_table.py, staleness_compare.py,
#: sampler_compare.py, rebuild_spread.py, compare_builds.py and the robust chain's candidates
DERIVED = re.compile(
    r"^(?:paradox_table|staleness-k0-k2|sampler_compare|spread(?:-\w+)?|compare(?:-[\w-]+)?"
    r"|[\w-]*candidates)\.json$"
)


class DerivedTable(AssertionError):
    """A claim read a table a probe derived, not the raw file the number comes from."""


def raw(path: Path) -> Path:
    """``path``, checked to be a raw file that exists (its name in the error otherwise)."""
    if DERIVED.match(path.name):
        raise DerivedTable(f"{path.relative_to(REPO)} is a derived table: read its raw files")
    if not path.is_file():
        raise FileNotFoundError(errno.ENOENT, "raw file missing", str(path))
    return path


def read_json(path: Path):
    """A raw JSON file, parsed once a session (hundreds of claims read the same few files; the
    value is shared, so a claim reads it and never changes it)."""
    return _json(raw(path))


def read_lines(path: Path) -> list[dict]:
    """A raw JSON-lines file, parsed once a session (as ``read_json``)."""
    return _lines(raw(path))


@functools.cache
def _json(path: Path):
    return json.loads(path.read_text())


@functools.cache
def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# --------------------------------------------------------------------------- finding text


def normalised(text: str) -> tuple[str, list[int]]:
    """``text`` with each whitespace run one space and ``**`` dropped, and for each character
    kept its offset in ``text``."""
    out: list[str] = []
    where: list[int] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if text.startswith("**", i):
            i += 2
            continue
        if ch.isspace():
            if out and out[-1] == " ":
                i += 1
                continue
            ch = " "
        out.append(ch)
        where.append(i)
        i += 1
    return "".join(out), where


def flat(text: str) -> str:
    return normalised(text)[0].strip()


HEADING = re.compile(r"^(#{1,6}) +(.*)$", re.MULTILINE)


def section(text: str, heading: str | None) -> tuple[int, int]:
    """The offsets of the section whose heading starts with ``heading`` (to the next heading of
    its level or above), or of the whole text."""
    if heading is None:
        return 0, len(text)
    for m in HEADING.finditer(text):
        if m.group(2).startswith(heading):
            level = len(m.group(1))
            for n in HEADING.finditer(text, m.end()):
                if len(n.group(1)) <= level:
                    return m.start(), n.start()
            return m.start(), len(text)
    raise AssertionError(f"no heading starts with {heading!r}")


@functools.cache
def doc_text(doc: str) -> str:
    """A doc's text (read once a session: the docs do not change while the claims run)."""
    return (REPO / doc).read_text()


@functools.cache
def _region(doc: str, within: str | None) -> tuple[int, int, str, list[int]]:
    """A section's offsets in its doc and its normalised text, once a session."""
    text = doc_text(doc)
    lo, hi = section(text, within)
    body, where = normalised(text[lo:hi])
    return lo, hi, body, where


def nearest(text: str, quote: str) -> str:
    """The doc line most like a quote that is not there: what a failure shows."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    best = difflib.get_close_matches(quote[:200], lines, n=1, cutoff=0.3)
    return best[0] if best else "(no similar line)"


def compute(claim: Claim) -> str:
    """The claim's text from its raw file; a missing file fails with the file's name."""
    try:
        return claim.compute(REPO / claim.source)
    except FileNotFoundError as e:
        name = Path(e.filename).relative_to(REPO) if e.filename else claim.source
        raise AssertionError(f"{claim.doc}: the raw file {name} is missing") from e


def computed_spans(claim: Claim) -> list[tuple[int, int]]:
    """The offsets in the doc of what the claim computes: each filled part of a template, or
    the whole value."""
    value = compute(claim)
    lo, hi = locate(claim, value)
    if not isinstance(value, Filled):
        return [(lo, hi)]
    _, where = normalised(value)  # flat index -> index in value
    text = doc_text(claim.doc)
    _, doc_where = normalised(text[lo:hi])
    lead = len(value) - len(value.lstrip())
    out = []
    for a, b in value.spans:
        inside = [i for i, w in enumerate(where) if a <= w < b]
        if inside:
            first = inside[0] - sum(1 for w in where if w < lead)
            last = inside[-1] - sum(1 for w in where if w < lead)
            out.append((lo + doc_where[first], lo + doc_where[last] + 1))
    return out


def locate(claim: Claim, value: str | None = None) -> tuple[int, int]:
    """The offsets in the doc of the text the claim recomputes (its value inside its quote);
    AssertionError when the doc no longer says it, or the file gives another value."""
    value = compute(claim) if value is None else value
    if not flat(value):
        raise AssertionError(f"{claim.doc}: the claim computes no text from {claim.source}")
    lo, hi, body, where = _region(claim.doc, claim.within)
    quote = flat(claim.quote if claim.quote is not None else value)
    at = body.find(quote)
    if at < 0:
        raise AssertionError(
            f"{claim.doc} no longer says {quote!r}"
            + (f" (in {claim.within!r})" if claim.within else "")
            + f"; nearest: {nearest(doc_text(claim.doc)[lo:hi], quote)!r}"
        )
    inner = quote.find(flat(value))
    if inner < 0:
        raise AssertionError(f"{claim.doc}: the file gives {flat(value)!r}, the doc {quote!r}")
    start = at + inner
    return lo + where[start], lo + where[start + len(flat(value)) - 1] + 1


# --------------------------------------------------------------------------- values and forms

#: a claim's value, or a part of it, from the claim's source path
Getter = Callable[[Path], str]


class Filled(str):
    """A template's text with where each part's value stands in it (``spans``): coverage counts
    the numbers a part computed, not those the template writes out."""

    spans: tuple[tuple[int, int], ...] = ()


def fill(template: str, *parts: Getter) -> Getter:
    """The text ``template`` with each ``{}`` the next part's value: a sentence or a table row
    whose numbers are read from the file."""
    pieces = template.split("{}")
    if len(pieces) != len(parts) + 1:
        raise ValueError(f"{len(pieces) - 1} places for {len(parts)} parts in {template!r}")

    def text(path: Path) -> Filled:
        out, spans = pieces[0], []
        for part, piece in zip(parts, pieces[1:], strict=True):
            value = str(part(path))
            spans.append((len(out), len(out) + len(value)))
            out += value + piece
        filled = Filled(out)
        filled.spans = tuple(spans)
        return filled

    return text


def pct(value: float) -> str:
    """``0.9833 → "98.3%"``, ``1.0 → "100%"``: how the docs write a share."""
    text = f"{value * 100:.1f}"
    return (text[:-2] if text.endswith(".0") else text) + "%"


def share(value: float) -> str:
    """A share as the toy tables write it: one decimal, bare at the ends (``0.85 → "85.0%"``,
    ``1.0 → "100%"``, ``0.0 → "0%"``)."""
    return "100%" if value == 1 else "0%" if value == 0 else f"{value * 100:.1f}%"


def pct1(value: float) -> str:
    """A share with its decimal kept: ``0.0 → "0.0%"``."""
    return f"{value * 100:.1f}%"


def pts(value: float) -> str:
    """A share in points, one decimal: ``0.9667 → "96.7"``."""
    return f"{value * 100:.1f}"


def eval_metrics(folder: Path) -> dict:
    """An eval's ``summary.json`` metrics (``folder`` the eval's output folder)."""
    return read_json(folder / "summary.json")["metrics"]


def acc(ev: str, form: Callable[[float], str] = share, variant: str = "robust") -> Getter:
    """The accuracy of the eval folder ``ev`` (relative to the claim's source)."""
    return lambda p: form(eval_metrics(p / ev)["variants"][variant]["value"])


def use(ev: str, form: Callable[[float], str] = share) -> Getter:
    """The eval's tool use: the share of questions with an executed call."""
    return lambda p: form(eval_metrics(p / ev)["tools"]["usage_rate"])


def calls(ev: str) -> Getter:
    """Calls a question, one decimal ("0" when none: how the tables write it)."""

    def value(p: Path) -> str:
        c = eval_metrics(p / ev)["tools"]["avg_calls"]
        return "0" if c == 0 else f"{c:.1f}"

    return value


def right(ev: str, sep: str = " / ") -> Getter:
    """``"59 / 60"``: the questions answered right, of those asked."""

    def value(p: Path) -> str:
        m = eval_metrics(p / ev)
        return f"{round(m['variants']['robust']['value'] * m['n'])}{sep}{m['n']}"

    return value


def answers(ev: str, count: str, sep: str = " / ") -> Getter:
    """One of ``answers.json``'s counts (``colour_right``, ``options_copied``, ...) of its n."""

    def value(p: Path) -> str:
        a = read_json(p / ev / "answers.json")
        return f"{a[count]}{sep}{a['n']}"

    return value


def steps_of(path: Path) -> dict[int, dict]:
    """A trainer's ``metrics.jsonl`` by step: the rows of a training step (they hold rewards)."""
    return {r["step"]: r for r in read_lines(path) if "reward/acc" in r}


def fixed(decimals: int) -> Callable[[float], str]:
    return lambda x: f"{x:.{decimals}f}"


#: one and two decimals, the forms most numbers take
ONE, TWO = fixed(1), fixed(2)


def at_step(file: str, step: int, key: str, form: Callable[[float], str] = TWO) -> Getter:
    """One number a training step logged (``file`` a ``metrics.jsonl`` under the source)."""
    return lambda p: form(steps_of(p / file)[step][key])


def seconds(key: str, form: str = "{:.0f}") -> Getter:
    """A step's wall seconds from the runner's ``results.json`` (``commands``)."""
    return lambda p: form.format(read_json(p / "results.json")["commands"][key]["seconds"])


def accuracy(path: Path) -> float:
    """The robust accuracy of an eval's ``summary.json``."""
    return read_json(path)["metrics"]["variants"]["robust"]["value"]


def right_of(path: Path, sep: str = " / ") -> str:
    """``"59 / 60"`` from an eval's summary.json."""
    m = read_json(path)["metrics"]
    return f"{round(m['variants']['robust']['value'] * m['n'])}{sep}{m['n']}"
