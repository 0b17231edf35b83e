"""Per-sample scoring: the extracted answer of one episode against the sample's gold.

Letter extraction and span parsing come from ``paravt.rewards`` (one rule for training and
evaluation, robust to the forms in PROTOCOL §4 and to first-letter traps such as "A man…").
Temporal grounding uses ``paravt.rewards.temporal_iou_hull`` — intersection over the hull of the
two spans, with the gold span taken as annotated (never clamped to the decoded video length), the
Charades-STA rule.

A sample whose episode failed (missing or broken video, backend error, unusable annotation) is
scored 0 on every metric: errors stay in the denominator.
"""

from __future__ import annotations

from typing import Any

from paravt.eval.samples import LETTERS


def answer_text_of(prediction: str | None, answer_text: str | None) -> str:
    """The text to score: the engine's extracted answer, else PROTOCOL §4 extraction of the raw text."""
    if answer_text is not None and str(answer_text).strip():
        return str(answer_text)
    if not prediction:
        return ""
    from paravt.agent.parser import extract_answer

    return extract_answer(prediction) or ""


def _score_mcq(text: str, sample: dict) -> dict:
    from paravt.rewards import extract_mcq_letter

    options = list(sample.get("options") or [])
    letter = extract_mcq_letter(text, options) if text else None
    if letter is not None:
        letter = str(letter).strip().upper() or None
    if letter is not None and letter not in LETTERS[: len(options)]:
        letter = None
    gold = sample.get("answer")
    return {"extracted": letter, "correct": float(letter is not None and letter == gold)}


def _score_tvg(text: str, sample: dict) -> dict:
    from paravt.rewards import parse_span, temporal_iou_hull

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
        base = {"extracted": None}
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
    from paravt.eval.judge import RuleJudge

    judge = judge or RuleJudge()
    verdict = judge.judge(sample.get("question", ""), str(sample.get("answer") or ""), text)
    return {"extracted": text, **verdict}
