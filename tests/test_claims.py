"""Numbers in the docs are recomputed from the raw files they come from (``tests/claims.py``),
every results file the docs cite is in the repository, and the claims cover the docs' result
numbers (``tests/claims_coverage.py``).

Why: docs drifted from their files (the README's demo line quoted a build two builds old),
tables cited episode files that were never committed, a derived table's rounding let "99.5,
sd 1.3" pass where the raw files give 99.4, sd 1.4, and 103 claims covered 16% of the numbers.
A claim here fails when its doc no longer says it, when its file is not committed or is a
derived table, or when the file gives another number.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from claimkit import Claim, DerivedTable, locate, read_json
from claims import CLAIMS, REPO
from claims_coverage import DOCS as COVERED_DOCS
from claims_coverage import FLOOR, report

#: the docs whose run numbers must come from committed files
DOCS = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").rglob("*.md"))]
DOCS += sorted(p.relative_to(REPO).as_posix() for p in (REPO / "experiments").glob("*/README.md"))
DOCS += sorted(p.relative_to(REPO).as_posix() for p in (REPO / "experiments").glob("*/LOG.md"))


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


def _id(claim: Claim) -> str:
    return f"{claim.doc}: {(claim.quote or claim.within or claim.source)[:50]}"


@pytest.mark.parametrize("claim", CLAIMS, ids=[_id(c) for c in CLAIMS])
def test_a_claim_is_recomputed_from_its_committed_file(claim):
    assert _committed(claim.source), f"{claim.source} is not committed"
    locate(claim)  # the doc says it, and its raw file gives it


def test_a_claim_whose_raw_file_is_missing_fails_with_the_files_name():
    gone = Claim("README.md", "paravt", "experiments/toy_paradox/results",
                 lambda p: read_json(p / "paradox-3seeds/eval/gone-4/summary.json"))  # fmt: skip
    with pytest.raises(AssertionError, match="raw file .*paradox-3seeds/eval/gone-4/summary.json"):
        locate(gone)


def test_a_claim_may_not_read_a_derived_table():
    derived = REPO / "experiments/toy_paradox/results/paradox-3seeds/paradox_table.json"
    assert derived.is_file()
    with pytest.raises(DerivedTable, match="paradox_table.json is a derived table"):
        read_json(derived)


def test_a_claim_that_the_file_contradicts_fails_with_both_texts():
    wrong = Claim("README.md", "paravt teaches", "README.md", lambda p: "paravt learns")
    with pytest.raises(AssertionError, match="the file gives 'paravt learns'"):
        locate(wrong)


def test_the_claims_cover_the_docs_result_numbers():
    """``python tests/claims_coverage.py --uncovered`` lists the numbers left."""
    r = report(CLAIMS)
    assert not r.errors, r.errors
    assert r.share() >= FLOOR, f"{100 * r.share():.1f}% of the result numbers covered"


def test_the_coverage_counts_and_marks_by_its_rules():
    from claims_coverage import mark, numbers_of

    text = (
        "Accuracy 98.3% [70.0, 89.4], lr 0.3 and `0.5`; vLLM 0.32.0, Qwen2.5, §5.4, 5 seeds.\n"
        "<!-- not results (setting): 0.3 -->\n\nAgain 0.3 here.\n"
    )
    found = numbers_of("x.md", text)
    assert [n.text for n in found] == ["98.3%", "[70.0, 89.4]", "0.3", "0.3"]
    assert mark("x.md", text, found) == []
    assert [n.kind for n in found] == ["", "", "setting", ""]  # the marker's block only
    stale = "One 0.4 here.\n<!-- not results (setting): 0.7 -->\n"
    assert "lists '0.7', not in its block" in mark("y.md", stale, numbers_of("y.md", stale))[0]
    odd = "One 0.4.\n<!-- not results (guess): 0.4 -->\n"
    assert "unknown kind 'guess'" in mark("z.md", odd, numbers_of("z.md", odd))[0]


def test_the_coverage_reads_every_doc_it_names():
    assert all((REPO / d).is_file() for d in COVERED_DOCS)


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
