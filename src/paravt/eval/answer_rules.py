"""Letter-reading rules of other harnesses, so paravt's numbers can be set beside theirs.

paravt's own reading (``paravt.rewards.extract_mcq_letter``, the ``robust`` variant) reads option
texts, lower-case letters and "A man …" correctly. Published leaderboards and the ParaVT paper
were not produced that way: each benchmark's scorer and the paper's reference harness read an
answer with a short rule of their own, and a number is only comparable with theirs when it is read
with the same rule. This module holds those rules, re-stated in our words from their documented
behaviour, as pure functions of one text; each returns the character the rule picks (or ``None``
when it picks nothing), and the caller compares it with the gold letter as the original does:
plain equality, case-sensitive, without checking that the letter is one of the options.

Deliberately faithful, including their known traps ("A man walks in" is option A under the
LVBench and reference rules; "Coloured bars" is option C under the Video-MME rule). Do not
"fix" them here; the robust reading exists for that.
"""

from __future__ import annotations

import re

__all__ = [
    "BENCHMARK_RULES",
    "longvideobench_letter",
    "lvbench_letter",
    "reference_letter",
    "videomme_letter",
]

# --------------------------------------------------------------------------- Video-MME

# The answer lead-ins Video-MME's scorer deletes before looking for a letter (deleted verbatim,
# case-sensitive, wherever they occur).
_VIDEOMME_PREFIXES = (
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option is",
    "The correct option is",
    "Best answer:",
    "Best option:",
    "Answer:",
)
_VIDEOMME_LETTER = re.compile(r"[ABCD]")
_VIDEOMME_MAX_WORDS = 10


def videomme_letter(text: str | None) -> str | None:
    """Video-MME's rule: delete the lead-ins; a reply of more than 10 words with no capital A–D
    reads as no answer; otherwise the first capital A–D anywhere (even inside a word)."""
    s = str(text or "").strip()
    for prefix in _VIDEOMME_PREFIXES:
        s = s.replace(prefix, "")
    hit = _VIDEOMME_LETTER.search(s)
    if len(s.split()) > _VIDEOMME_MAX_WORDS and hit is None:
        return None
    return hit.group(0) if hit else None


# --------------------------------------------------------------------------- LVBench


def lvbench_letter(text: str | None) -> str | None:
    """LVBench's rule: keep the text before the first ``)``, then the text after the last ``(``
    in it, then its first whitespace-separated token, and read that token's first character."""
    s = str(text or "").strip()
    if ")" in s:
        s = s.split(")", 1)[0]
    if "(" in s:
        s = s.rsplit("(", 1)[1]
    tokens = s.split()
    return tokens[0][0] if tokens else None


# --------------------------------------------------------------------------- LongVideoBench

_LVB_LETTER = re.compile(r"[A-E]")


def longvideobench_letter(text: str | None) -> str | None:
    """LongVideoBench's rule: the first capital A–E anywhere in the reply. The released scorer
    draws a random letter when there is none; we read that as no answer (scored 0) so a number
    never depends on a random draw."""
    hit = _LVB_LETTER.search(str(text or ""))
    return hit.group(0) if hit else None


# --------------------------------------------------------------------------- the paper's reference

_REF_ONE_LETTER = re.compile(r"[A-J]")
_REF_STANDALONE = re.compile(r"\b([A-J])\b")
_REF_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_REF_PHRASE = re.compile(r"(?:[Aa]nswer is|[Aa]nswer:)\s*\(?([A-J])\b")


def reference_letter(text: str | None) -> str | None:
    """The ParaVT reference harness's rule, applied to the raw final turn; the first hit wins:

    (a) the body of the first ``<answer>…</answer>`` if it is one letter A–J, else the first
        standalone capital A–J inside that body;
    (b) the whole text, if it is one letter A–J;
    (c) a letter after ``answer is`` or ``Answer:``;
    (d) the first standalone capital A–J anywhere (so "A man …" reads as A);
    (e) the first character of the text.
    """
    s = str(text or "").strip()
    if not s:
        return None
    tag = _REF_ANSWER_TAG.search(s)
    if tag:
        body = tag.group(1).strip()
        if _REF_ONE_LETTER.fullmatch(body):
            return body
        inner = _REF_STANDALONE.search(body)
        if inner:
            return inner.group(1)
    if _REF_ONE_LETTER.fullmatch(s):
        return s
    phrase = _REF_PHRASE.search(s)
    if phrase:
        return phrase.group(1)
    standalone = _REF_STANDALONE.search(s)
    if standalone:
        return standalone.group(1)
    return s[0]


#: The ``benchmark`` variant's letter rule per split; a split not named here has no published
#: letter rule that we reproduce and is read the ``robust`` way (see docs/EVAL.md).
BENCHMARK_RULES = {
    "videomme": videomme_letter,
    "videomme_sub": videomme_letter,
    "lvbench": lvbench_letter,
    "longvideobench": longvideobench_letter,
}
