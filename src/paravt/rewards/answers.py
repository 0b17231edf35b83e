"""Reading an answer and scoring it: MCQ letters, temporal spans, open-ended text (R_acc).

Why this is more than a regex: the reward must not be fooled by English. The reference capped
letters at A–D and normalised the letter ``A`` away; a naive "first capital letter" rule scores
``A man opens the door`` as option A. Here a letter counts only when it is written as a choice —
alone (``B``, ``(B)``, ``B.``), as a label (``B. the dog``), after "answer"/"option"/"choice" or
the Chinese 答案是/答案为/选, or as the option's own text — and ``A``/``I`` followed by an ordinary
lower-case word are read as the article/pronoun they are. Those marked forms read a letter in
either case (``the answer is b`` → B); a letter in running text must be a capital.

The text read is :func:`answer_text`, the parser's docs/PROTOCOL.md §4 extraction — the same text
the engine records and evaluation scores: without an ``<answer>`` tag that is all of the text after
``</think>``, so ``D. 1633`` followed by an explanation reads as D.

Spans accept ``s - e``, ``s to e``, ``between s and e``, ``[s, e]``, ``m:ss``/``h:mm:ss`` and
numbers with units (``12.5s``, ``2 minutes``); a reversed pair is swapped; anything else is
``None`` (scored 0).

Two overlap measures are exported under their own names: ``temporal_iou`` (intersection over
union, the training reward) and ``temporal_iou_hull`` (intersection over the hull of both spans,
the Charades-STA evaluation rule of docs/PROTOCOL.md §6). For two intervals that overlap, union and
hull are the same length, and disjoint intervals score 0 under both, so the two agree on every
proper pair of spans; the tests check that, and the second name exists so evaluation code says which
rule it means.
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal, get_args

from paravt.errors import UserError
from paravt.grammar import extract_answer

__all__ = [
    "LETTERS",
    "QUESTION_TYPES",
    "QuestionType",
    "TooManyOptionsError",
    "UnknownQuestionTypeError",
    "accuracy",
    "answer_text",
    "exact_match",
    "extract_mcq_letter",
    "mcq_gold_letter",
    "parse_span",
    "require_letterable",
    "temporal_iou",
    "temporal_iou_hull",
    "token_f1",
]

#: The option letters of docs/PROTOCOL.md §5.1 (A–J): prompts letter options with these, and
#: extraction and scoring read only these. The one definition; every other room imports it.
LETTERS = "ABCDEFGHIJ"
#: Question types (docs/PROTOCOL.md §5.1): multiple choice, temporal grounding, open-ended. The
#: one definition: annotations use ``QuestionType``, checks read ``QUESTION_TYPES`` from it.
QuestionType = Literal["mcq", "tvg", "oe"]
QUESTION_TYPES: tuple[str, ...] = get_args(QuestionType)


class UnknownQuestionTypeError(UserError):
    """A sample's question type is not one the reward knows."""


class TooManyOptionsError(UserError):
    """A question has more options than ``LETTERS`` can label."""


def require_letterable(options: Sequence[Any] | None, question: str) -> None:
    """Raise :class:`TooManyOptionsError` when ``options`` cannot all be lettered A–J.

    Why where a question is built: an eleventh option would be shown to the model under a letter
    that extraction never reads, so every answer to it would score 0 without a word. ``question``
    names the question in the message (its id and/or text)."""
    if options is not None and len(options) > len(LETTERS):
        raise TooManyOptionsError(
            f"{question} has {len(options)} options; at most {len(LETTERS)} can be lettered "
            f"({LETTERS[0]}–{LETTERS[-1]}, PROTOCOL §5). Drop options or split the question."
        )


# --------------------------------------------------------------------------- answer text


def answer_text(prediction: Any) -> str:
    """The answer part of a prediction: docs/PROTOCOL.md §4 extraction, the same rule as the
    engine's and the evaluation's (without tags that is all of the text, so ``"B\\nbecause..."``
    reads as B)."""
    if prediction is None:
        return ""
    return extract_answer(str(prediction))


# --------------------------------------------------------------------------- MCQ

_CONNECTORS = frozenset(
    "is was because since as and or which that would should will seems appears -".split()
)
_MARKDOWN = re.compile(r"[*`]+")
# Letter case, one rule: a letter marked as a choice — alone, as a label, after an answer phrase —
# is read in either case ("b", "(b)", "the answer is b", "答案是b"); a letter in running text (a
# leading bare letter followed by words, or one found anywhere) must be a capital, because single
# lower-case letters in prose are words ("a", "i") or abbreviations.
_CAP = f"[{LETTERS}]"
_ANY_CASE = f"[{LETTERS}{LETTERS.lower()}]"
_ALONE = re.compile(rf"[\(\[\{{]?\s*({_ANY_CASE})\s*[\)\]\}}]?\s*[.:)]?")
_LABEL = re.compile(
    rf"^(?:[\(\[]\s*({_ANY_CASE})\s*[\)\]]|({_ANY_CASE})[.:)](?=\s|$)|({_ANY_CASE})\s+[-–—]\s)"
)
_PHRASE = re.compile(
    r"(?i:\b(answer|option|choice))"
    r"(?:\s+(?i:is|would\s+be|should\s+be|will\s+be|must\s+be))?"
    r"\s*[:=\-]?\s*(?:(?i:option|choice)\s*)?"
    rf"[\(\[]?\s*({_ANY_CASE})\s*[\)\]]?(?![A-Za-z0-9])"
)
# Chinese answer phrases: 答案是/答案为/答案： (the answer is) rank with "answer", 选/选择/选项
# (choose / option) with "option".
_ZH_PHRASE = re.compile(
    r"(答案|选项|选择|选)\s*(?:应该是|应为|应是|是|为)?\s*[:：]?\s*[\(\[（【]?\s*"
    rf"({_ANY_CASE})\s*[\)\]）】]?(?![A-Za-z0-9])"
)
_LEADING_BARE = re.compile(rf"^({_CAP})\s+(\S+)")
_STANDALONE = re.compile(rf"(?<![A-Za-z0-9])({_CAP})(?![A-Za-z0-9])")
_OPTION_LABEL = re.compile(
    rf"^\s*[\(\[]?\s*({_CAP})\s*[\)\]]?\s*[.:)]\s*|^\s*[\(\[]\s*({_CAP})\s*[\)\]]\s*"
)
_PUNCT_TABLE = str.maketrans({c: " " for c in string.punctuation})


def _reads_as_word(text: str, letter_end: int, letter: str) -> bool:
    """``A``/``I`` (either case) followed by an ordinary lower-case word is an article or a
    pronoun."""
    if letter.upper() not in "AI":
        return False
    m = re.match(r"\s+([A-Za-z'’]+)", text[letter_end:])
    if not m:
        return False
    word = m.group(1)
    return word[0].islower() and word.lower() not in _CONNECTORS


def _norm_words(text: str) -> str:
    return " ".join(text.lower().translate(_PUNCT_TABLE).split())


def _option_texts(options: Sequence[Any]) -> list[str]:
    """Option texts without their own ``A.``/``(A)`` labels, normalised for comparison."""
    out = []
    for i, opt in enumerate(options):
        text = str(opt)
        m = _OPTION_LABEL.match(text)
        if m and i < len(LETTERS) and (m.group(1) or m.group(2)) == LETTERS[i]:
            text = text[m.end() :]
        out.append(_norm_words(text))
    return out


def _by_option_text(s: str, options: Sequence[Any], contained: bool) -> str | None:
    texts = _option_texts(options)
    target = _norm_words(s)
    if not target:
        return None
    if not contained:
        hits = [i for i, t in enumerate(texts) if t and t == target]
    else:
        padded = f" {target} "
        found = [(len(t), i) for i, t in enumerate(texts) if len(t) >= 3 and f" {t} " in padded]
        if not found:
            return None
        longest = max(n for n, _ in found)
        hits = [i for n, i in found if n == longest]
    distinct = {texts[i] for i in hits}
    if len(distinct) == 1 and len(hits) == 1 and hits[0] < len(LETTERS):
        return LETTERS[hits[0]]
    return None


def extract_mcq_letter(text: Any, options: Sequence[Any] | None = None) -> str | None:
    """The option letter (``"A"``–``"J"``) a prediction chooses, or ``None``.

    With ``options`` the letter must be one of theirs (five options → A–E) and the option's own
    text also counts as choosing it. Never raises.
    """
    s = _MARKDOWN.sub("", answer_text(text)).strip().strip("\"'“”‘’").strip()
    if not s:
        return None
    n = min(len(options), len(LETTERS)) if options else len(LETTERS)
    valid = LETTERS[:n]

    def ok(letter: str | None) -> str | None:
        return letter if letter and letter in valid else None

    m = _ALONE.fullmatch(s)
    if m:
        return ok(m.group(1).upper())
    m = _LABEL.match(s)
    if m:
        return ok(next(g for g in m.groups() if g).upper())
    phrases = [
        (m.group(1).lower() not in ("answer", "答案"), m.start(), m.group(2).upper())
        for pattern in (_PHRASE, _ZH_PHRASE)
        for m in pattern.finditer(s)
        if not _reads_as_word(s, m.end(2), m.group(2))
    ]
    if phrases:
        return ok(min(phrases)[2])
    if options:
        hit = _by_option_text(s, options, contained=False)
        if hit:
            return ok(hit)
    m = _LEADING_BARE.match(s)
    if m and not _reads_as_word(s, m.end(1), m.group(1)):
        return ok(m.group(1))
    if options:
        hit = _by_option_text(s, options, contained=True)
        if hit:
            return ok(hit)
    found = set()
    for m in _STANDALONE.finditer(s):
        letter = m.group(1)
        after = s[m.end() : m.end() + 2]
        if _reads_as_word(s, m.end(), letter) or re.match(r"\.[A-Za-z]", after):
            continue
        if letter in valid:
            found.add(letter)
    return found.pop() if len(found) == 1 else None


def mcq_gold_letter(gold: Any, options: Sequence[Any] | None = None) -> str | None:
    """The gold letter from a letter (``"B"``, ``"(B)"``), a 0-based index, or the option text."""
    if isinstance(gold, bool) or gold is None:
        return None
    if isinstance(gold, int):
        return LETTERS[gold] if 0 <= gold < len(LETTERS) else None
    return extract_mcq_letter(str(gold), options)


# --------------------------------------------------------------------------- spans

_TIME = r"\d+(?::\d{1,2}){1,2}(?:\.\d+)?|\d*\.\d+|\d+"
_UNIT = r"(?:\s*(hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s)\b)?"
_T1 = rf"(?<![\w.:])({_TIME}){_UNIT}"
_T2 = rf"({_TIME}){_UNIT}(?![\w:])"
_STRONG = re.compile(rf"{_T1}\s*(?:-|–|—|~|\bto\b|\buntil\b|\btill\b|\band\b)\s*{_T2}", re.I)
_BRACKETED = re.compile(rf"[\(\[]\s*{_T1}\s*,\s*{_T2}\s*[\)\]]", re.I)
_COMMA = re.compile(rf"{_T1}\s*,\s*{_T2}", re.I)
_ANY_TIME = re.compile(rf"{_T1}", re.I)
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}


def _seconds(token: str, unit: str | None) -> float:
    if ":" in token:
        value = 0.0
        for part in token.split(":"):
            value = value * 60.0 + float(part)
        return value
    scale = _UNIT_SECONDS[unit[0].lower()] if unit else 1.0
    return float(token) * scale


def _pair(t1: str, u1: str | None, t2: str, u2: str | None) -> tuple[float, float] | None:
    if u1 and not u2:
        u2 = u1
    elif u2 and not u1:
        u1 = u2
    try:
        s, e = _seconds(t1, u1), _seconds(t2, u2)
    except (ValueError, OverflowError):
        return None
    if not (math.isfinite(s) and math.isfinite(e)):
        return None
    return (s, e) if s <= e else (e, s)


def parse_span(text: Any) -> tuple[float, float] | None:
    """A predicted ``(start, end)`` in seconds (start ≤ end), or ``None`` if there is none."""
    if text is None:
        return None
    if isinstance(text, (list, tuple)) and len(text) == 2:
        try:
            s, e = float(text[0]), float(text[1])
        except (TypeError, ValueError):
            return None
        if not (math.isfinite(s) and math.isfinite(e)):
            return None
        return (s, e) if s <= e else (e, s)
    s = answer_text(text)
    if len(s) > 20_000:
        s = s[:20_000]
    for pattern in (_STRONG, _BRACKETED, _COMMA):
        m = pattern.search(s)
        if m:
            return _pair(*m.groups())
    times = list(_ANY_TIME.finditer(s))
    if len(times) == 2:
        return _pair(*times[0].groups(), *times[1].groups())
    return None


def _proper(span: Any) -> tuple[float, float] | None:
    try:
        s, e = float(span[0]), float(span[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    if not (math.isfinite(s) and math.isfinite(e)):
        return None
    return (s, e) if s <= e else (e, s)


def temporal_iou(pred: Any, gold: Any) -> float:
    """|pred ∩ gold| / |pred ∪ gold| in [0, 1] (training reward); reversed spans are swapped."""
    p, g = _proper(pred), _proper(gold)
    if p is None or g is None:
        return 0.0
    inter = max(0.0, min(p[1], g[1]) - max(p[0], g[0]))
    union = (p[1] - p[0]) + (g[1] - g[0]) - inter
    if union <= 0.0:
        return 1.0 if p == g else 0.0
    return min(1.0, max(0.0, inter / union))


def temporal_iou_hull(pred: Any, gold: Any) -> float:
    """|pred ∩ gold| / |hull(pred, gold)| in [0, 1] (Charades-STA, docs/PROTOCOL.md §6)."""
    p, g = _proper(pred), _proper(gold)
    if p is None or g is None:
        return 0.0
    inter = max(0.0, min(p[1], g[1]) - max(p[0], g[0]))
    hull = max(p[1], g[1]) - min(p[0], g[0])
    if hull <= 0.0:
        return 1.0 if p == g else 0.0
    return min(1.0, max(0.0, inter / hull))


# --------------------------------------------------------------------------- open-ended

_ARTICLES = frozenset({"a", "an", "the"})


def oe_tokens(text: str) -> list[str]:
    """Words of an open-ended answer as compared: lower case, punctuation and articles dropped
    (one rule for the training reward and the evaluation judge)."""
    return [w for w in _norm_words(text).split() if w not in _ARTICLES]


def token_f1(prediction: Any, gold: Any) -> float:
    """F1 over token multisets (lower case, punctuation and articles dropped); a list of gold
    answers scores the best one."""
    if isinstance(gold, (list, tuple)):
        return max((token_f1(prediction, g) for g in gold), default=0.0)
    pred = oe_tokens(answer_text(prediction))
    ref = oe_tokens(str(gold) if gold is not None else "")
    if not pred or not ref:
        return 0.0
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: Any, gold: Any) -> float:
    """1.0 when the normalised texts are equal (any of a list of golds)."""
    if isinstance(gold, (list, tuple)):
        return max((exact_match(prediction, g) for g in gold), default=0.0)
    pred = oe_tokens(answer_text(prediction))
    return float(bool(pred) and pred == oe_tokens(str(gold) if gold is not None else ""))


# --------------------------------------------------------------------------- R_acc


def accuracy(
    prediction: Any,
    gold: Any,
    question_type: str,
    options: Sequence[Any] | None = None,
    oe_metric: str = "f1",
) -> float:
    """R_acc ∈ [0, 1] by question type (``mcq`` | ``tvg`` | ``oe``)."""
    if question_type == "mcq":
        letter = extract_mcq_letter(prediction, options)
        return float(letter is not None and letter == mcq_gold_letter(gold, options))
    if question_type == "tvg":
        span = parse_span(prediction)
        ref = _proper(gold) if isinstance(gold, (list, tuple)) else parse_span(gold)
        if span is None or ref is None:
            return 0.0
        return temporal_iou(span, ref)
    if question_type == "oe":
        if oe_metric == "exact":
            return exact_match(prediction, gold)
        if oe_metric != "f1":
            raise UnknownQuestionTypeError(f"oe_metric={oe_metric!r}: use 'f1' or 'exact'")
        return token_f1(prediction, gold)
    raise UnknownQuestionTypeError(
        f"question_type={question_type!r} is not one of {list(QUESTION_TYPES)}; fix the sample's "
        f"question_type field"
    )
