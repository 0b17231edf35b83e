"""Reading an answer and scoring it: MCQ letters, temporal spans, open-ended text (R_acc).

One principle reads every question type (docs/ANSWERS.md, "One candidate"): **an answer counts
only when it commits to exactly one candidate — one option, one span, one phrase.** The reader
collects every candidate the answer text names, merges the mentions that name the same one,
drops those the text explicitly rejects (``A is wrong``, ``not C``), and reads the one left; none
left, or two or more, is no answer. What joins two candidates never matters — ``B or C``,
``B | C``, ``B 还是 C``, ``Answer: B\\nAnswer: C``, ``B. He pours milk`` (a letter beside another
option's text): each names two, and each scores 0. Why: a hedge that read as one of its
candidates earned full marks whenever that one was right, so GRPO would learn to hedge; under
this rule a hedge never earns more than a committed wrong answer (the property
``tests/rewards/test_reward_hedges.py`` checks on generated hedges).

- **Options** (:func:`extract_mcq_letter`): a candidate is named by its letter standing as a
  token, in either case (``B``, ``(b)``, ``the answer is b``), or by its own text; ``A``/``I``
  before an ordinary word is the article/pronoun unless the answer names another candidate
  (then it is one more, and the answer is none).
- **Spans** (:func:`parse_span`): every span written, the same span written twice is one.
- **Phrases** (:func:`oe_hedged`): an open-ended answer split at every joiner — any symbol,
  bracket, punctuation mark or line break, and the conjunctions of several languages — may hold
  no more phrases than the gold does.

The text read is :func:`answer_text`, the parser's docs/PROTOCOL.md §4 extraction — the same text
the engine records and evaluation scores: without an ``<answer>`` tag that is all of the text after
``</think>``.

Spans accept ``s - e``, ``s to e``, ``between s and e``, ``[s, e]``, ``m:ss``/``h:mm:ss`` and
numbers with units (``12.5s``, ``2 minutes``); a reversed pair is swapped; failing any span form,
two times labelled as start and end (``starts at 6.6 and ends at 15.2``).

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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from paravt.errors import UserError
from paravt.grammar import extract_answer

__all__ = [
    "FUNCTION_WORDS",
    "LETTERS",
    "QUESTION_TYPES",
    "QuestionType",
    "TooFewOptionsError",
    "TooManyOptionsError",
    "UnknownQuestionTypeError",
    "accuracy",
    "answer_text",
    "bonus_earned",
    "exact_match",
    "extract_mcq_letter",
    "mcq_gold_letter",
    "oe_content_words",
    "oe_hedged",
    "oe_phrases",
    "oe_tokens",
    "offers_alternatives",
    "overlap_f1",
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
    """A question has more options than ``LETTERS`` can label, or (``TooFewOptionsError``) too
    few to choose from."""


class TooFewOptionsError(TooManyOptionsError):
    """A multiple-choice question with one option: nothing to choose, and every answer scores 1."""


def require_letterable(options: Sequence[Any] | None, question: str) -> None:
    """Raise :class:`TooManyOptionsError` when ``options`` cannot all be lettered A–J, and
    :class:`TooFewOptionsError` when there is only one.

    Why where a question is built: an eleventh option would be shown to the model under a letter
    that extraction never reads, so every answer to it would score 0 without a word; a single
    option is no choice at all, and "A" would be right whatever the model saw. ``question``
    names the question in the message (its id and/or text)."""
    if options is not None and len(options) == 1:
        raise TooFewOptionsError(
            f"{question} has 1 option ({str(options[0])[:60]!r}); a multiple-choice question "
            "needs at least 2. Add the other choices, or give no options for an open-ended "
            "question."
        )
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


# Markup that decorates an answer without naming anything: emphasis, code, headings, quotes,
# strike-through and HTML-like tags (``**B**``, ``<b>B</b>``). Removed before reading.
_MARKUP = re.compile(
    r"</?(?:b|i|u|s|em|strong|code|mark|del|ins|sub|sup|small|span|p|br|hr)\s*/?>|[*_`#]+|~~"
)


def _plain(text: Any) -> str:
    return _MARKUP.sub(" ", answer_text(text))[:20_000]


# --------------------------------------------------------------------------- candidates


@dataclass(frozen=True)
class _Mention:
    """One place where the answer names a candidate: ``key`` is the candidate (an option index,
    a span), ``start``/``end`` its characters in the read text."""

    start: int
    end: int
    key: Any


# What explicitly rejects the candidate right after it: "not C", "rather than C", "C 不是"...
_REJECT_BEFORE = re.compile(
    r"(?:(?i:\b(?:not|no|never|nor|neither|except|excluding|besides|unlike|without|than)|"
    r"\b(?:isn|aren|wasn|weren)['’]t)|不是|并非|排除|而非)"
    r"[\s\"'“”‘’(\[]*(?i:(?:option|choice|the\s+span)\s*)?[\s(\[]*$"
)
# ... and what rejects the candidates just before it, when nothing but other candidates and
# "and"/"or"/commas stand between: "A is wrong", "A and C show other actions", "C 不对".
_NEGATIVE = r"wrong|incorrect|false|impossible|unlikely|excluded|eliminated|ruled\s+out|invalid"
_REJECT_AFTER = re.compile(
    r"[\s)\]\"'”’]*(?:"
    r"(?i:(?:is|are|was|were|seems?|looks?|appears?|sounds?|(?:would|must|can|could|should)\s+be|"
    rf"['’]s)?\s*(?:{_NEGATIVE}|a\s+distractor|distractors|out\b)\b)"
    r"|(?i:(?:is|are|was|were)\s+(?:not|n['’]t)\s+(?:it|right|correct|true|the\s+answer|"
    r"possible|shown|what)\b)"
    r"|(?i:(?:is|are|was|were)n['’]t\s+(?:it|right|correct|true|the\s+answer|possible|shown)\b)"
    r"|(?i:(?:do|does|did)(?:\s+not|n['’]t)\s+(?:match|fit|apply|show|happen|occur|appear)\b)"
    r"|(?i:(?:shows?|showed|describes?|depicts?)\s+(?:other|another|different|something\s+else)\b)"
    r"|(?:不对|不正确|错误|错|不是|可以排除|被排除))"
)
# What may stand between candidates that share one rejection ("A and C are wrong", "A, C 不对").
_COORDINATION = re.compile(r"[\s,/&]*(?i:(?:and|or|&|和|或|与|及)\s*)?[\s(\[\"'“‘]*$")


def _rejected(s: str, ordered: list[_Mention]) -> list[bool]:
    """For each mention (in text order): does the text explicitly reject its candidate — a
    negation just before it, or a rejecting predicate after it and the candidates coordinated
    with it ("A and C are wrong")? One pass from the end, so a long run is linear."""
    reach = [m.end for m in ordered]  # where the run of coordinated mentions from here ends
    for i in range(len(ordered) - 2, -1, -1):
        m, nxt = ordered[i], ordered[i + 1]
        if nxt.start < m.end or _COORDINATION.match(s, m.end, nxt.start):
            reach[i] = max(m.end, reach[i + 1])
    return [
        bool(_REJECT_BEFORE.search(s, max(0, m.start - 40), m.start))
        or bool(_REJECT_AFTER.match(s, reach[i]))
        for i, m in enumerate(ordered)
    ]


def _committed(s: str, mentions: list[_Mention]) -> Any:
    """The one candidate left once mentions of the same candidate are merged and the rejected
    ones dropped, or ``None``."""
    ordered = sorted(mentions, key=lambda m: (m.start, m.end))
    kept = {m.key for m, out in zip(ordered, _rejected(s, ordered), strict=True) if not out}
    return kept.pop() if len(kept) == 1 else None


# --------------------------------------------------------------------------- MCQ

# A letter token: one of A–J with no Latin letter or digit beside it (Chinese may touch it:
# "答案是D"), not part of an abbreviation ("e.g.", "i.e."), of a hyphenated word ("A-frame") or
# of a contraction ("I'm", "I'd"); a letter hyphened to an option's label is one ("A-Option B").
_NOT_CJK_WORD = r"[^\W_\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"
# The word an option's label starts with: a letter hyphened to it names two candidates
# ("A-Option B"), where a letter hyphened to any other word is part of it ("A-frame").
_LABEL_WORD = r"(?i:option|choice|answer|opci[oó]n|choix|r[eé]ponse|antwort|opzione|op[cç][aã]o)\b"
_LETTER = re.compile(
    rf"(?<!{_NOT_CJK_WORD})(?<![A-Za-z]{{2}}[-–])"
    r"(?![A-Ja-j]\.[A-Za-z]\.)(?!(?<=[A-Za-z]\.)[A-Ja-j]\.)"
    r"([A-Ja-j])"
    rf"(?!{_NOT_CJK_WORD})(?![-–](?!{_LABEL_WORD})[A-Za-z]{{2}})(?!['’](?:m|s|d|ll|ve|re|t)\b)"
)
# A letter hyphened to the next word, which ``_LETTER`` leaves out as part of a hyphenated word
# ("A-frame"): it is a letter after all when that word begins an option's own text
# ("A-He opens a door" names A and the option "He opens a door").
_LETTER_HYPHENED = re.compile(
    rf"(?<!{_NOT_CJK_WORD})(?<![A-Za-z]{{2}}[-–])([A-Ja-j])[-–](?={_NOT_CJK_WORD})"
)
#: Words that join one candidate to another: the conjunctions and hedge words of English,
#: Spanish, French, German, Italian, Portuguese and Russian ("or", "oder", "ou", "или"). They
#: split an open-ended answer into phrases, and after an ``A``/``I`` they keep it a letter.
JOIN_WORDS = frozenset(
    """or and vs versus either nor plus but unless otherwise alternatively maybe perhaps possibly
    probably also else o u y e ni pero quizás quizá también ou et mais soit aussi oder und aber
    vielleicht bzw sowie auch oppure ma forse mas talvez или и либо""".split()
)
# Words after an A/I that keep it a letter ("A is correct", "A might also be right", "a or b"):
# a verb that says something of it, or a joining word. Otherwise "A man", "I think" are the
# article and the pronoun.
_CONNECTORS = JOIN_WORDS | frozenset(
    """is was are were be because since as which that would should will seems seem appears
    appear looks look might may could can must too then""".split()
)
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+", re.UNICODE)


def _words(text: str) -> list[tuple[int, int, str]]:
    """Word tokens of ``text`` with their characters (CJK characters one by one), lower case."""
    return [(m.start(), m.end(), m.group(0).lower()) for m in _TOKEN.finditer(text)]


def _option_mentions(s: str, options: Sequence[Any], n: int) -> list[_Mention]:
    """Where the answer names an option by its own text (its words in a row, any case), leaving
    out one inside a longer option's text there ("dark red" names "dark red", not also "red").
    Texts under 3 characters count only as the whole answer."""
    tokens = _words(s)
    words = [t[2] for t in tokens]
    found: list[_Mention] = []
    for i, text in enumerate(_option_texts(options)[:n]):
        need = [w for _, _, w in _words(text)]
        if not need or (len("".join(need)) < 3 and need != words):
            continue
        k = len(need)
        for j in range(len(words) - k + 1):
            if words[j : j + k] == need:
                found.append(_Mention(tokens[j][0], tokens[j + k - 1][1], i))
    return _outermost(found)


def _outermost(found: list[_Mention]) -> list[_Mention]:
    """``found`` without the mentions that lie inside a longer one (one pass in text order)."""
    out: list[_Mention] = []
    widest: _Mention | None = None  # the earlier mention reaching furthest
    for m in sorted(found, key=lambda m: (m.start, -m.end)):
        inside = widest is not None and widest.end >= m.end
        if not (inside and widest.end - widest.start > m.end - m.start):
            out.append(m)
        if widest is None or m.end > widest.end:
            widest = m
    return out


def _option_texts(options: Sequence[Any]) -> list[str]:
    """Option texts without their own ``A.``/``(A)`` labels."""
    out = []
    for i, opt in enumerate(options):
        text = str(opt)
        m = re.match(
            r"^\s*[(\[]?\s*([A-J])\s*[)\]]?\s*[.:)]\s*|^\s*[(\[]\s*([A-J])\s*[)\]]\s*", text
        )
        if m and i < len(LETTERS) and (m.group(1) or m.group(2)) == LETTERS[i]:
            text = text[m.end() :]
        out.append(text)
    return out


def _article(s: str, end: int, letter: str) -> str:
    """How an ``A``/``I`` (either case) ending at ``end`` reads: ``"letter"``, or, before an
    ordinary lower-case word (not one of :data:`_CONNECTORS`), the article/pronoun — ``"maybe"``
    for a capital (a letter after all when the answer names another candidate: ``B. A might be
    right`` is two), ``"word"`` for a small one (``D. 1633. The video shows a clock`` is D)."""
    if letter.upper() not in "AI":
        return "letter"
    m = re.match(r"\s+([^\W\d_]+)", s[end:])
    if not m or not m.group(1)[0].islower() or m.group(1).lower() in _CONNECTORS:
        return "letter"
    return "maybe" if letter.isupper() else "word"


def _letter_mentions(s: str, valid: str, taken: list[_Mention]) -> tuple[list, list]:
    """The letters the answer names as tokens (outside option texts), in either case, split into
    sure ones and capitals that may be the article or pronoun (``A man``, ``I think``)."""
    sure, maybe = [], []
    text_starts = {t.start for t in taken}
    hyphened = [m for m in _LETTER_HYPHENED.finditer(s) if m.end() in text_starts]
    for m in [*_LETTER.finditer(s), *hyphened]:  # order is _committed's to set
        letter = m.group(1)
        if letter.upper() not in valid or any(t.start <= m.start() < t.end for t in taken):
            continue
        kind = _article(s, m.end(), letter)
        mention = _Mention(m.start(), m.end(), LETTERS.index(letter.upper()))
        if kind != "word":
            (sure if kind == "letter" else maybe).append(mention)
    return sure, maybe


def extract_mcq_letter(text: Any, options: Sequence[Any] | None = None) -> str | None:
    """The option letter (``"A"``–``"J"``) an answer commits to, or ``None``.

    The one-candidate rule (module docstring): every option the answer names — by its letter as a
    token (either case) or by its own text — merged per option, explicitly rejected ones dropped;
    exactly one left is the answer. ``A``/``I`` before an ordinary word is the article/pronoun
    when the answer names nothing else, and one more candidate when it does (``A man opens the
    door`` is none without options, ``B. A man opens it`` is two); a small ``a``/``i`` before an
    ordinary word is always the article/pronoun (``B, a man opens it`` is B). With ``options``
    the letter must be one of theirs (five options → A–E). Never raises.
    """
    s = _plain(text)
    if not s.strip():
        return None
    n = min(len(options), len(LETTERS)) if options else len(LETTERS)
    named = _option_mentions(s, options, n) if options else []
    sure, maybe = _letter_mentions(s, LETTERS[:n], named)
    mentions = named + sure
    if mentions:
        mentions += maybe  # "A man …" is the article only when nothing else is named
    key = _committed(s, mentions)
    return LETTERS[key] if key is not None else None


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
# ASCII word characters only around a time: "答案是3-9秒" holds the span 3-9
_T1 = rf"(?<![A-Za-z0-9_.:])({_TIME}){_UNIT}"
_T2 = rf"({_TIME}){_UNIT}(?![A-Za-z0-9_:])"
_STRONG = re.compile(rf"{_T1}\s*(?:-|–|—|~|\bto\b|\buntil\b|\btill\b|\band\b)\s*{_T2}", re.I)
_BRACKETED = re.compile(rf"[\(\[]\s*{_T1}\s*,\s*{_T2}\s*[\)\]]", re.I)
_COMMA = re.compile(rf"{_T1}\s*,\s*{_T2}", re.I)
_ANY_TIME = re.compile(rf"{_T1}", re.I)
_UNIT_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0}
# Two lone times make a span only when the text labels the first a start and the second an end
# ("starts at 6.6 and ends at 15.2", "Start time: 6.60s\nEnd time: 15.21s", {"start": 3, ...}).
_START_LABEL = re.compile(
    r"(?:(?i:\b(?:start\w*|begin\w*|from|since)\b)|开始|起)\W{0,3}(?:\w+\W{1,3})?$"
)
_END_LABEL = re.compile(
    r"(?:(?i:\b(?:end\w*|until|till|to|finish\w*|stop\w*)\b)|结束|止)\W{0,3}(?:\w+\W{1,3})?$"
)


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


def _span_mentions(s: str) -> list[_Mention]:
    """Every span written in ``s``, in text order, keyed by its ``(start, end)`` seconds (an
    unreadable one by its characters). A dash/"to" span wins over a comma pair that overlaps it
    (``At 1, 12 to 20``)."""
    taken: list[_Mention] = []
    covered = bytearray(len(s))
    for pattern in (_STRONG, _BRACKETED, _COMMA):
        for m in pattern.finditer(s):
            a, b = m.span()
            if not any(covered[a:b]):
                taken.append(_Mention(a, b, _pair(*m.groups()) or ("unreadable", a)))
        for t in taken:
            covered[t.start : t.end] = b"\x01" * (t.end - t.start)
    return sorted(taken, key=lambda t: t.start)


def _two_times(s: str) -> tuple[float, float] | None:
    """Exactly two times, the first labelled as a start and the second as an end. Two bare
    numbers are not a span (``Video 3 shows it 12 times``), nor two times offered side by side
    (``at 5 s or at 10 s``)."""
    times = list(_ANY_TIME.finditer(s))
    if len(times) != 2:
        return None
    first, second = times
    if not _START_LABEL.search(s[max(0, first.start() - 40) : first.start()]):
        return None
    if not _END_LABEL.search(s[max(first.end(), second.start() - 40) : second.start()]):
        return None
    return _pair(*first.groups(), *second.groups())


def parse_span(text: Any) -> tuple[float, float] | None:
    """The ``(start, end)`` in seconds (start ≤ end) an answer commits to, or ``None``.

    The one-candidate rule (module docstring): every span written, the same span written twice
    counted once (``12.5-18 s (0:12.5-0:18)``), an explicitly rejected one dropped (``3-7, not
    9-12``); exactly one left is the answer, two different ones in any layout are none
    (``3-7 or 9-12``, ``3-7. 9-12.``, ``3 - 7 s (9 - 12 s)``). Failing any span form, two times
    labelled as start and end. A ``(start, end)`` pair of numbers is taken as it is."""
    if text is None:
        return None
    if isinstance(text, (list, tuple)) and len(text) == 2:
        return _proper(text)
    s = _plain(text)
    spans = _span_mentions(s)
    if not spans:
        return _two_times(s)
    key = _committed(s, spans)
    return key if isinstance(key, tuple) and len(key) == 2 and key[0] != "unreadable" else None


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
#: Grammatical words: articles, pronouns, forms of be/do/have, modals, the commonest conjunctions
#: and question words, in English, then Chinese, Japanese and Korean particles (one character
#: each, as CJK text is read character by character). What every sentence needs and no answer is
#: about: the think terms ask reasoning to hold one (docs/ANSWERS.md, "Reasoning"), and an
#: open-ended answer's *content* words, the ones the tool bonus asks for, are its other words.
#: Negations and prepositions are not here: "not" and "under" change what an answer says.
FUNCTION_WORDS = frozenset(
    """a an the this that these those it its i me my we us our you your he him his she her they
    them their there here is are was were be been being am do does did done has have had will
    would shall should can could may might must of to and or but so as if because than then also
    just very what which who whom whose why how when where
    的 是 了 我 你 他 她 它 们 这 那 有 也 都 就 要 会 个 着 过 吗 呢 吧
    の は を が に で た て だ す
    은 는 이 가 을 를 의 에""".split()
)
_OE_WORD = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"
    r"|\d+(?:[-.,:/]\d+)+"
    r"|[^\W_]+(?:['’][^\W_]+)*",
    re.UNICODE,
)
# What joins two phrases of an open-ended answer: any character that is not part of a word (a
# symbol, a bracket, punctuation, a line break: "red | blue square", "red square (blue square)",
# "red square; blue square"), the joining words (JOIN_WORDS: "red or blue", "rot oder blau") and
# their Chinese and Japanese counterparts ("红或蓝"). An answer's lead-in ("the answer is",
# "答案是") joins too: it is no phrase of its own.
_OE_JOIN = re.compile(
    r"(?i:\b(?:the\s+)?(?:final\s+|correct\s+|best\s+)?answer"
    r"(?:\s+(?:is|would\s+be|should\s+be|will\s+be|must\s+be))?\b)"
    rf"|(?i:(?<![^\W_])(?:{'|'.join(sorted(JOIN_WORDS, key=len, reverse=True))})(?![^\W_]))"
    r"|答案(?:应该是|应为|是|为)?|或者|还是|以及|也许|或许|可能|或|和|与|及|跟|または|それとも|か|や"
    r"|[^\w\s'’.,:/-]|(?<![^\W_])['’]|['’](?![^\W_])|(?<!\d)[-.,:/]|[-.,:/](?!\d)|\n",
    re.UNICODE,
)
# A phrase that opens with a negation rejects its words ("red square, not blue square").
_OE_NEGATION = frozenset(
    "not no never nor without except instead rather nicht kein keine pas non 不是 而不是 并非 不".split()
)


def oe_tokens(text: str) -> list[str]:
    """Words of an open-ended answer as the evaluation judge compares them: lower case,
    punctuation and the articles a, an, the dropped."""
    table = str.maketrans({c: " " for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"})
    return [w for w in str(text).lower().translate(table).split() if w not in _ARTICLES]


def oe_phrases(text: Any) -> list[list[str]]:
    """The phrases an open-ended answer names, each as its words (lower case, articles dropped):
    the answer text split at every joiner (``_OE_JOIN``), empty pieces and pieces that open with
    a negation (``not blue``) left out. ``red | blue square`` is two phrases, ``a red square``
    one, ``red-blue square`` two (a hyphen between words joins, as any symbol does; between
    digits it is part of the number, ``3-5``)."""
    out = []
    for piece in _OE_JOIN.split(_plain(text)):
        words = [w.lower() for w in _OE_WORD.findall(piece or "")]
        if words and words[0] not in _OE_NEGATION:
            kept = [w for w in words if w not in _ARTICLES]
            if kept:
                out.append(kept)
    return out


def oe_hedged(prediction: Any, gold: Any) -> bool:
    """Whether an open-ended answer names more phrases than the gold (any of a list of golds)
    does: the one-candidate rule for phrases (module docstring). ``red | blue square``,
    ``red square (blue square)`` and ``red square; blue square`` are two phrases against the one
    of ``a red square``, so no answer; ``salt or pepper`` against ``salt and pepper`` is not."""
    golds = gold if isinstance(gold, (list, tuple)) else [gold]
    n = len(oe_phrases(prediction))
    return all(n > len(oe_phrases(g)) for g in golds if g is not None) and n > 1


def _oe_words(text: Any) -> list[str]:
    return [w for phrase in oe_phrases(text) for w in phrase]


def oe_content_words(text: Any) -> set[str]:
    """The words of an open-ended answer that are not grammatical (:data:`FUNCTION_WORDS`): what
    the answer is about. The tool bonus asks an answer for exactly its gold's content words."""
    return {w for w in _oe_words(text) if w not in FUNCTION_WORDS}


def overlap_f1(pred: Sequence[str], ref: Sequence[str]) -> float:
    """F1 of two word lists, counting repeated words as often as they occur (SQuAD's rule)."""
    if not pred or not ref:
        return 0.0
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: Any, gold: Any) -> float:
    """F1 over the answer's and the gold's words (:func:`oe_phrases`, articles dropped, repeated
    words counted); a list of golds scores the best one. A hedge (:func:`oe_hedged`) scores 0."""
    if isinstance(gold, (list, tuple)):
        return max((token_f1(prediction, g) for g in gold), default=0.0)
    if gold is None or oe_hedged(prediction, gold):
        return 0.0
    return overlap_f1(_oe_words(prediction), _oe_words(gold))


def exact_match(prediction: Any, gold: Any) -> float:
    """1.0 when the answer's words equal the gold's (any of a list of golds); a hedge is 0."""
    if isinstance(gold, (list, tuple)):
        return max((exact_match(prediction, g) for g in gold), default=0.0)
    if gold is None or oe_hedged(prediction, gold):
        return 0.0
    pred = _oe_words(prediction)
    return float(bool(pred) and pred == _oe_words(gold))


# The evaluation judge's narrower rule (paravt.eval.judge): MMVU's protocol credits an answer that
# holds the reference with extra correct detail, so there only words that offer an alternative
# make a hedge ("red or blue", "red/blue", "red, maybe blue", 或 / 还是).
_HEDGE_WORDS = r"(?:maybe|perhaps|possibly|probably|else|also|even|alternatively|otherwise)"
_OE_ALTERNATIVE = re.compile(
    r"(?i:\b(?:or|either|versus|vs|alternatively|otherwise)\b)"
    r"|(?<=[^\W\d_])\s*/\s*(?=[^\W\d_])"
    rf"|[,;(\[–—-]\s*(?i:{_HEDGE_WORDS})\b"
    r"|或|还是"
)


def offers_alternatives(text: Any) -> bool:
    """Whether a text offers alternatives in words (``red or blue``, ``red/blue``, ``either a
    cat or a dog``, ``red, maybe blue``): the evaluation judge's hedge rule."""
    return bool(_OE_ALTERNATIVE.search(str(text) if text is not None else ""))


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


def bonus_earned(
    prediction: Any,
    gold: Any,
    question_type: str,
    options: Sequence[Any] | None,
    acc: float,
    cfg: Any,
) -> bool:
    """Whether an answer is correct enough for the tool's correct-answer bonus (R_tool): R_acc at
    or above ``cfg.tool_correct_threshold``, and for an open-ended answer the gold's content words
    exactly (:func:`oe_content_words`; any of a list of golds): none missing, none added.

    Why: F1 pays part of an answer, so a generic noun alone (``square`` for gold ``a red square``,
    F1 0.67) reached the bonus without the word that tells the candidates apart, and so did two
    candidates written side by side with no joiner (``red blue square``, F1 0.8), which the phrase
    rule cannot see. The reward cannot know which gold word tells the candidates apart, so the
    bonus asks for all of them and nothing else; F1 still pays a partial answer as R_acc."""
    try:
        if float(acc) < cfg.tool_correct_threshold:
            return False
    except (TypeError, ValueError):
        return False
    if question_type != "oe":
        return True
    have = oe_content_words(prediction)
    golds = gold if isinstance(gold, (list, tuple)) else [gold]
    return any(oe_content_words(g) == have for g in golds if g is not None)
