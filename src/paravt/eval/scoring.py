"""Per-sample scoring: the extracted answer of one episode against the sample's gold.

Three readings of the same answer (the variants of docs/PROTOCOL.md §6, docs/EVAL.md):

- ``robust`` (``score_sample``): letter extraction and span parsing from ``paravt.rewards`` — one
  rule for training and evaluation, robust to the forms in docs/PROTOCOL.md §4 and to first-letter
  traps such as "A man…". Temporal grounding uses ``paravt.rewards.temporal_iou_hull`` —
  intersection over the hull of the two spans, with the gold span taken as annotated (never clamped
  to the decoded video length), the Charades-STA rule.
- ``benchmark`` and ``paper`` (``score_variants``): the benchmark's published letter rule, and the
  paper's reference rule, from ``paravt.eval.answer_rules``. They read letters differently; spans
  and the open-ended judge are shared with ``robust`` (the reference scores open-ended items by
  letter matching, so they score ~0 under ``paper``).

A sample whose episode failed (missing or broken video, backend error, unusable annotation) is
scored 0 on every metric: errors stay in the denominator (the ``paper`` aggregation of
Charades-STA leaves them out, as the reference did; that is decided in ``metrics``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from paravt.eval.answer_rules import BENCHMARK_RULES, reference_letter
from paravt.eval.judge import RuleJudge
from paravt.eval.results import ResultRow
from paravt.eval.samples import LETTERS
from paravt.grammar import extract_answer
from paravt.rewards import extract_mcq_letter, parse_span, temporal_iou_hull

__all__ = ["score_sample"]

#: The alternative readings stored beside the ``robust`` score of every result line.
ALTERNATIVE_VARIANTS = ("benchmark", "paper")


def answer_text_of(prediction: str | None, answer_text: str | None) -> str:
    """The text to score: the engine's extracted answer, else docs/PROTOCOL.md §4 extraction of the
    raw text."""
    if answer_text is not None and str(answer_text).strip():
        return str(answer_text)
    if not prediction:
        return ""

    return extract_answer(prediction) or ""


def _score_mcq(text: str, sample: dict) -> dict:
    options = list(sample.get("options") or [])
    letter = extract_mcq_letter(text, options) if text else None
    if letter is not None:
        letter = str(letter).strip().upper() or None
    if letter is not None and letter not in LETTERS[: len(options)]:
        letter = None
    gold = sample.get("answer")
    return {"extracted": letter, "correct": float(letter is not None and letter == gold)}


def _score_tvg(text: str, sample: dict) -> dict:
    span = parse_span(text) if text else None
    if span is None:
        return {"extracted": None, "iou": 0.0}
    s, e = sorted((float(span[0]), float(span[1])))
    return {"extracted": [s, e], "iou": temporal_iou_hull((s, e), sample.get("answer"))}


def score_sample(
    sample: dict, prediction: str | None, answer_text: str | None, error: Any, judge=None
) -> dict:
    """Score one result; ``judge`` (``paravt.eval.judge``) scores open-ended answers."""
    qtype = sample.get("question_type")
    if error:
        base: dict[str, float | None] = {"extracted": None}
        if qtype == "tvg":
            base["iou"] = 0.0
        else:
            base["correct"] = 0.0
        if qtype == "oe":
            base["f1"] = 0.0
        return base
    text = answer_text_of(prediction, answer_text)
    if qtype == "mcq":
        return _score_mcq(text, sample)
    if qtype == "tvg":
        return _score_tvg(text, sample)

    judge = judge or RuleJudge()
    verdict = judge.judge(sample.get("question", ""), str(sample.get("answer") or ""), text)
    return {"extracted": text, **verdict}


def _letter_score(letter: str | None, gold: Any) -> dict:
    """A foreign rule's verdict: correct iff the character it picked equals the gold, as they do."""
    return {"extracted": letter, "correct": float(letter is not None and letter == gold)}


def score_variants(
    sample: dict, prediction: str | None, answer_text: str | None, error: Any, robust: dict
) -> dict:
    """``{"benchmark": score, "paper": score}`` for one result; ``robust`` is ``score_sample``'s.

    ``benchmark`` applies the split's published letter rule to the answer text (the ``<answer>``
    body, docs/PROTOCOL.md §4); ``paper`` applies the reference's rule to the raw final turn, as the
    reference harness did. Where neither has a rule of its own (spans; open-ended under
    ``benchmark``; MLVU and MMVU letters under ``benchmark``) the robust score is reused.
    """
    qtype = sample.get("question_type")
    if error or qtype == "tvg":
        return {v: dict(robust) for v in ALTERNATIVE_VARIANTS}
    gold = sample.get("answer")
    text = answer_text_of(prediction, answer_text)
    rule = BENCHMARK_RULES.get(str(sample.get("split")))
    if qtype == "mcq" and rule is not None:
        benchmark = _letter_score(rule(text), gold)
    else:
        benchmark = dict(robust)
    raw = prediction if prediction else text
    paper = _letter_score(reference_letter(raw), gold)
    return {"benchmark": benchmark, "paper": paper}


def score_row(row: ResultRow, judge=None) -> ResultRow:
    """``row`` with its robust ``score`` and the other variants' ``scores`` (re)computed from its
    sample and answer; the run and ``paravt eval score`` both score through here."""
    error = None if row.error is None else dataclasses.asdict(row.error)
    score = score_sample(row.sample, row.prediction, row.answer_text, error, judge=judge)
    scores = score_variants(row.sample, row.prediction, row.answer_text, error, score)
    return dataclasses.replace(row, score=score, scores=scores)
