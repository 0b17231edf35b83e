"""The toy experiment's guide stays a guide, and every pointer to a section of it or of its lab
log names a section that is there.

Why: the toy README grew into a 1,550-line dated lab log that a reader had to dig through for the
result. It is now a guide (``README.md``, at most ``GUIDE_MAX_LINES`` lines) with the log moved,
whole, to ``LOG.md``; some forty places (docs, code comments, docstrings, the demo model's card)
point at a section by its quoted heading: ``(experiments/toy_paradox/LOG.md, "The letter")``, or
inside the experiment's folder and its tests ``(LOG.md, "Six builds")``. A Markdown link's anchor
is checked by tests/test_docs_links.py; a quoted heading was checked by nothing, and one already
named a heading that never was ("RL at lr 1e-4" for "At lr 1e-4").
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from repo_files import REPO

TOY = "experiments/toy_paradox"
#: the docs a pointer may name, by the word it names them with
TOY_DOCS = {"README": f"{TOY}/README.md", "LOG": f"{TOY}/LOG.md"}
GUIDE_MAX_LINES = 400
#: where a bare ``README`` or ``LOG`` means the experiment's own
BARE_IN = (f"{TOY}/", "tests/toy/")

# a quoted heading: it starts with a word, and is neither an apostrophe's "'s" nor a dict key (a
# quote then ":")
_QUOTE = r"(?:\"(?=\w)[^\"\n{}\[\]]{1,100}\"|'(?=\w)(?!s\b)[^'\n{}\[\]]{1,100}')(?!\s*:)"
# after the doc's name: ".md", a closing backtick or parenthesis, a comma, then the quotes
_TAIL = rf"(?:\.md)?`?(?:'s)?\)?[,;:]?\s*\(?\s*({_QUOTE}(?:(?:,\s*|\s+and\s+){_QUOTE})*)"
PATHED = re.compile(rf"(?:{TOY}(?:/|,\s*)|\btoy\s+)(README|LOG){_TAIL}")
BARE = re.compile(rf"(?<![\w/.-])(README|LOG){_TAIL}")
_ONE_QUOTE = re.compile(r"\"([^\"]+)\"|'([^']+)'")
# a line break with the next line's indent and comment marker: a quote may wrap
_WRAP = re.compile(r"\n[ \t]*(?:#:?|//)?[ \t]*")
_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ""}


def pointers(text: str, bare: bool) -> list[tuple[str, str]]:
    """``(doc word, quoted heading)`` of every pointer in ``text``; ``bare``: a plain ``README`` or
    ``LOG`` counts too (inside the experiment's folder)."""
    flat = _WRAP.sub(" ", text)
    out = []
    for pattern in (PATHED, BARE) if bare else (PATHED,):
        for m in pattern.finditer(flat):
            out += [(m.group(1), a or b) for a, b in _ONE_QUOTE.findall(m.group(2))]
    return out


def headings(path: Path) -> list[str]:
    """The text of every heading outside fenced blocks."""
    out, fenced = [], False
    for line in path.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6} +(.*)", line)):
            out.append(m.group(1))
    return out


def _scanned() -> list[str]:
    """Every tracked text file, the committed run folders' own READMEs among them (not this one:
    its examples name sections that need not exist)."""
    names = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                           check=True).stdout.split()  # fmt: skip
    return [
        n
        for n in names
        if Path(n).suffix in _SUFFIXES
        and (not n.startswith(f"{TOY}/results/") or n.endswith("README.md"))
        and (REPO / n).is_file()
        and REPO / n != Path(__file__).resolve()
    ]


def test_the_toy_readme_is_a_guide_not_a_log():
    lines = len((REPO / TOY_DOCS["README"]).read_text().splitlines())
    assert lines <= GUIDE_MAX_LINES, (
        f"{TOY_DOCS['README']} has {lines} lines (at most {GUIDE_MAX_LINES}): a run's full "
        "account goes to LOG.md, its result to the guide"
    )


def test_every_quoted_section_of_the_toy_docs_is_a_heading_there():
    heads = {word: headings(REPO / doc) for word, doc in TOY_DOCS.items()}
    found, bad = 0, []
    for name in _scanned():
        try:
            text = (REPO / name).read_text()
        except UnicodeDecodeError:
            continue
        for word, quote in pointers(text, name.startswith(BARE_IN)):
            found += 1
            if not any(h.startswith(quote) for h in heads[word]):
                bad.append(f"{name}: {TOY_DOCS[word]} has no section {quote!r}")
    assert found >= 30, f"only {found} pointers found: the finder no longer reads them"
    assert not bad, "\n".join(bad)


def test_the_finder_reads_each_form_and_no_code():
    text = (
        'the letter (experiments/toy_paradox/LOG.md, "The letter"), a link [log](LOG.md)\n'
        '("Earlier runs"), `experiments/toy_paradox/README.md`, "How to\n'
        '    # rerun" and "Files", the toy README ("What it showed"); the README\'s main command\n'
        "experiments/toy_paradox, LOG.md 'Memory'; (stated in the README)\n"
        '        "learning_rate": 3e-4\n'
    )
    assert pointers(text, bare=False) == [
        ("LOG", "The letter"),
        ("README", "How to rerun"),
        ("README", "Files"),
        ("README", "What it showed"),
        ("LOG", "Memory"),
    ]
    assert ("LOG", "Earlier runs") in pointers(text, bare=True)
    assert ("README", "learning_rate") not in pointers(text, bare=True)
