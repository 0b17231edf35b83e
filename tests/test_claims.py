"""Numbers in the docs are recomputed from the committed files they come from (``tests/claims.py``),
and every results file the docs cite is in the repository.

Why: docs drifted from their files (the README's demo line quoted a build two builds old) and
tables cited episode files that were never committed. A claim here fails when its doc no longer
says it, when its file is not committed, or when the file gives another number.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from claims import CLAIMS, REPO

#: the docs whose run numbers must come from committed files
DOCS = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md"))]
DOCS += sorted(p.relative_to(REPO).as_posix() for p in (REPO / "experiments").glob("*/README.md"))


def _tracked() -> set[str] | None:
    """Every path git tracks, or None outside a git checkout (then existence is checked)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, text=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return {n for n in out.split("\0") if n}


TRACKED = _tracked()


def _committed(rel: str) -> bool:
    path = REPO / rel
    if TRACKED is None:
        return path.exists()
    if path.is_dir():
        return any(t.startswith(rel.rstrip("/") + "/") for t in TRACKED)
    return rel in TRACKED


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


@pytest.mark.parametrize("claim", CLAIMS, ids=[f"{c.doc}: {c.quote[:50]}" for c in CLAIMS])
def test_a_claim_is_recomputed_from_its_committed_file(claim):
    assert _flat(claim.quote) in _flat((REPO / claim.doc).read_text()), "the doc no longer says it"
    assert _committed(claim.source), f"{claim.source} is not committed"
    value = claim.compute(REPO / claim.source)
    assert value in claim.quote, (value, claim.quote)


# A results path in backticks: benchmarks/results/…, experiments/…/results/…, or results/… (an
# experiment README's own folder).
_CITED = re.compile(r"`((?:benchmarks/|experiments/[\w-]+/)?results/[^`\s]*?)`")


def _cited_paths():
    for doc in DOCS:
        for m in _CITED.finditer((REPO / doc).read_text()):
            yield doc, m.group(1)


@pytest.mark.parametrize("doc", DOCS)
def test_every_results_file_a_doc_cites_is_committed(doc):
    """Relative ``results/…`` paths resolve against the doc's folder, the toy experiment's or
    benchmarks/."""
    missing = []
    for cited_doc, rel in _cited_paths():
        if cited_doc != doc or any(mark in rel for mark in ("*", "<", "NAME", "NEW")):
            continue  # a pattern or a placeholder, not a file
        bases = ["", f"{(REPO / doc).parent.relative_to(REPO).as_posix()}/",
                 "experiments/toy_paradox/", "benchmarks/"]  # fmt: skip
        candidates = [(b + rel).lstrip("./").rstrip("/") for b in bases]
        if not any(_committed(c) for c in candidates):
            missing.append(rel)
    assert not missing, missing


def test_no_table_cites_an_uncommitted_episode_file():
    """Per-episode files (``rank0.jsonl``) are not committed: no number may come from one."""
    for doc in DOCS:
        for line in (REPO / doc).read_text().splitlines():
            if "rank0.jsonl" in line:
                assert "not committed" in line or "were not committed" in _flat(
                    (REPO / doc).read_text()
                ), (doc, line)
