"""A frozen copy of the answer-reading and think rules as they stood at main 9f331e2, before
the one-candidate rule replaced them (4 Dec 2026): the "before" side of
``test_reward_adversarial.py``. Never edited; never imported by the library.

Why a copy and not constants: a hard-coded "before" total says nothing once the rule moves (a check
``after < before`` is vacuous when ``before`` is the maximum). With the old functions at hand the
tests compute what each completion earned under the old rule, through the same composition
(``paravt.rewards.compose``) with only the reading swapped in (:func:`old_rule`).

The body below the marker is main 9f331e2's ``src/paravt/rewards/answers.py`` verbatim (its
``__all__`` and module docstring dropped), then its ``ThinkRule.holds``.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Any

from paravt.grammar import extract_answer

LETTERS = "ABCDEFGHIJ"


# ---------------------------------------------------------------- frozen copy (main 9f331e2)
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
# Words that turn what follows into a second candidate: "B or maybe C", "12-18, or possibly
# 20-25", "red (perhaps blue)". One list for letters, option texts, spans and open-ended answers.
_HEDGE_WORDS = r"(?:maybe|perhaps|possibly|probably|else|also|even|alternatively|otherwise)"
# What may join a chosen answer to an alternative: connectors, brackets and hedge words, in any
# order ("B (or C)", "(B), or (C)", "B, or maybe C", "B / C", "B; perhaps C").
_JOIN_TOKEN = rf"[\(\[,/&;]|(?i:\bor\b|\band\b|\bvs\b\.?|\bversus\b|\b{_HEDGE_WORDS}\b)"
# A chosen letter offered with another as alternatives: "B or C", "(B)/(C)", "B, C", "A B C D",
# "B (or C)", "B, or maybe C".
_HEDGE_NEXT = re.compile(
    rf"\s*[\)\]]?(?:\s*(?:{_JOIN_TOKEN}))*\s*(?:(?i:option|choice)\s*)?[\(\[]?\s*"
    rf"({_ANY_CASE})(?![A-Za-z0-9])"
)
# The same join holding at least one connector, bracket or hedge word: an option's text after it
# is an alternative only then ("B or he pours milk", not "B he pours milk").
_JOIN_WORDED = re.compile(rf"\s*[\)\]]?(?:\s*(?:{_JOIN_TOKEN}))+\s*")


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


def _hedged(
    text: str, letter_end: int, letter: str, valid: str, options: Sequence[Any] | None = None
) -> bool:
    """Whether the letter ending at ``letter_end`` is followed by a different option as an
    alternative — its letter (``B or C``, ``B/C``, ``(B), (C)``, ``A B C D``, ``B (or C)``,
    ``B, or maybe C``) or, after a connector, its text (``B or he pours milk``): two different
    options are no answer (docs/ANSWERS.md rule 7), whichever form found the first one."""
    m = _HEDGE_NEXT.match(text, letter_end)
    if m and not _reads_as_word(text, m.end(1), m.group(1)):
        other = m.group(1).upper()
        if other != letter.upper() and other in valid:
            return True
    if not options:
        return False
    m = _JOIN_WORDED.match(text, letter_end)
    if not m:
        return False
    rest = f" {_norm_words(text[m.end() :])} "
    chosen = LETTERS.index(letter.upper())
    return any(
        i != chosen and len(t) >= 3 and rest.startswith(f" {t} ")
        for i, t in enumerate(_option_texts(options))
    )


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


# The words before an option's text that reject it rather than choose it: "red, not blue",
# "red rather than blue", "isn't blue" ("isn't" normalises to "isn t").
_NEGATIONS = frozenset({"not", "no", "never", "nor", "than", "t", "without"})


def _negated(before: str) -> bool:
    words = before.split()
    return bool(words) and (words[-1] in _NEGATIONS or words[-2:] == ["instead", "of"])


def _named_option_texts(target: str, texts: list[str]) -> set[str]:
    """The option texts (3+ characters) that occur as words in ``target``, leaving out one
    inside a longer option's text there and one rejected by a negation before it."""
    padded = f" {target} "
    found = [
        (m.start(), m.end(), t)
        for t in {t for t in texts if len(t) >= 3}
        for m in re.finditer(rf"(?<= ){re.escape(t)}(?= )", padded)
    ]
    return {
        t
        for a, b, t in found
        if not any(a2 <= a and b <= b2 and b2 - a2 > b - a for a2, b2, _ in found)
        and not _negated(padded[:a])
    }


def _by_option_text(s: str, options: Sequence[Any], contained: bool) -> str | None:
    """The letter of the option whose text the answer is (``contained=False``) or names
    (``contained=True``). Named means: exactly one option text occurs in the answer, not counting
    one inside a longer option's text (``dark red`` names "dark red", not also "red") or one
    rejected by a negation (``red, not blue``). Two different option texts are two answers —
    ``he opens a door or he pours milk`` is no answer — whatever joins them."""
    texts = _option_texts(options)
    target = _norm_words(s)
    if not target:
        return None
    if not contained:
        hits = [i for i, t in enumerate(texts) if t and t == target]
    else:
        named = _named_option_texts(target, texts)
        if len(named) != 1:
            return None
        hits = [i for i, t in enumerate(texts) if t in named]
    distinct = {texts[i] for i in hits}
    if len(distinct) == 1 and len(hits) == 1 and hits[0] < len(LETTERS):
        return LETTERS[hits[0]]
    return None


class _Undecided:
    """A reading rule that does not apply to the text: the next rule is asked."""


_UNDECIDED = _Undecided()
Reading = str | None | _Undecided


def _read_label(s: str, valid: str, options: Sequence[Any] | None) -> Reading:
    """A lone letter (``B``, ``(B)``), or a text that opens with one as its label (``B. red``)."""
    m = _ALONE.fullmatch(s)
    if m:
        return m.group(1).upper()
    m = _LABEL.match(s)
    if not m:
        return _UNDECIDED
    group = next(g for g in range(1, 4) if m.group(g))
    if _hedged(s, m.end(group), m.group(group), valid, options):
        return None
    return m.group(group).upper()


def _read_phrase(s: str, valid: str, options: Sequence[Any] | None) -> Reading:
    """The letter after an answer phrase (``the answer is B``), an ``answer`` one last."""
    phrases = [
        (m.group(1).lower() not in ("answer", "答案"), m.start(), m.group(2).upper(), m.end(2))
        for pattern in (_PHRASE, _ZH_PHRASE)
        for m in pattern.finditer(s)
        if not _reads_as_word(s, m.end(2), m.group(2))
    ]
    if not phrases:
        return _UNDECIDED
    _, _, letter, end = min(phrases)
    return None if _hedged(s, end, letter, valid, options) else letter


def _read_option_text(s: str, valid: str, options: Sequence[Any] | None) -> Reading:
    """The whole text is one option's text."""
    hit = _by_option_text(s, options, contained=False) if options else None
    return hit or _UNDECIDED


def _read_leading_bare(s: str, valid: str, options: Sequence[Any] | None) -> Reading:
    """A bare capital letter that opens the text and does not read as a word (``B because``)."""
    m = _LEADING_BARE.match(s)
    if not m or _reads_as_word(s, m.end(1), m.group(1)):
        return _UNDECIDED
    return None if _hedged(s, m.end(1), m.group(1), valid, options) else m.group(1)


def _read_contained_option(s: str, valid: str, options: Sequence[Any] | None) -> Reading:
    """One option's text (the longest that fits) inside the text."""
    hit = _by_option_text(s, options, contained=True) if options else None
    return hit or _UNDECIDED


def _read_standalone(s: str, valid: str, options: Sequence[Any] | None) -> Reading:
    """Exactly one valid letter standing alone anywhere in the text (the last rule: it decides)."""
    found = set()
    for m in _STANDALONE.finditer(s):
        letter = m.group(1)
        after = s[m.end() : m.end() + 2]
        if _reads_as_word(s, m.end(), letter) or re.match(r"\.[A-Za-z]", after):
            continue
        if letter in valid:
            found.add(letter)
    return found.pop() if len(found) == 1 else None


#: docs/ANSWERS.md's rules in the order they are tried; the first that applies decides
_LETTER_READERS = (
    _read_label,
    _read_phrase,
    _read_option_text,
    _read_leading_bare,
    _read_contained_option,
    _read_standalone,
)


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
    for read in _LETTER_READERS:
        letter = read(s, valid, options)
        if not isinstance(letter, _Undecided):
            return letter if letter and letter in valid else None
    return None


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


# Regions whose spans are quoted, not answered: double quotes, curly quotes, back-ticks, 「」.
_QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|`[^`\n]*`|「[^」\n]*」')
# What may come before a span that the answer marks as its own: "the answer is", "答案是" ...
_SPAN_LEAD = re.compile(
    r"(?:(?i:\banswer\b)|答案)(?:\s*(?i:is|was|would\s+be|should\s+be|will\s+be|:|=|：|是|为))*"
    r"\s*(?i:from|between)?\s*$"
)
# Before a span that opens the answer: only punctuation and "from"/"between".
_SPAN_OPENS = re.compile(r"^[\s\W]*(?i:from|between)?\s*$")
# Two spans offered as alternatives: what stands between them is only a connector and hedge
# words, or nothing — "12-18 or 20-25", "12-18, or 20-25", "12-18 (or maybe 20-25)", "12-18 /
# 20-25", "12-18 20-25". A bracket alone is a restatement ("12.5-18 s (0:12.5-0:18)" is one span).
_SPAN_OR = re.compile(
    rf"^\s*(?:[,;/|&]\s*)?(?:\(\s*)?(?:(?i:or|either|and|vs|versus|{_HEDGE_WORDS})\b[\s,]*)*$"
)
_BRACKET_ONLY = re.compile(r"^\s*[,;/|&]?\s*\(\s*$")
# Two times offered as alternatives: "at 5 s or at 10 s".
_TIMES_OR = re.compile(r"(?i:\bor\b|\beither\b)|/")
# A lone number is a time only with a unit, a clock form, or a start/end label just before it.
_TIME_LABEL = re.compile(
    r"(?i:\b(?:start\w*|begin\w*|end\w*|from|until|till|to|finish\w*|stop\w*|at)\b)\W{0,3}"
    r"(?:\w+\W{1,3})?$"
)


def _span_matches(s: str) -> list[tuple[int, int, tuple[float, float] | None]]:
    """Every span written in ``s`` as ``(start, end, span)``, in text order. A dash/"to" span wins
    over a comma pair that overlaps it (``At 1, 12 to 20``); spans inside quotes are dropped."""
    quoted = [(m.start(), m.end()) for m in _QUOTED.finditer(s)]
    taken: list[tuple[int, int, tuple[float, float] | None]] = []
    for pattern in (_STRONG, _BRACKETED, _COMMA):
        for m in pattern.finditer(s):
            a, b = m.span()
            if any(a < e and b > st for st, e, _ in taken):
                continue
            if any(q0 <= a and b <= q1 for q0, q1 in quoted):
                continue
            taken.append((a, b, _pair(*m.groups())))
    return sorted(taken, key=lambda t: t[0])


def _two_times(s: str) -> tuple[float, float] | None:
    """Exactly two times in the text, each marked as a time (a unit, ``m:ss``, or a start/end
    label just before it): ``Start time: 6.60s\nEnd time: 15.21s``. Two bare numbers are not a
    span: ``Video 3 shows it 12 times`` is none."""
    quoted = [(m.start(), m.end()) for m in _QUOTED.finditer(s)]
    times = [
        m
        for m in _ANY_TIME.finditer(s)
        if not any(q0 <= m.start() and m.end() <= q1 for q0, q1 in quoted)
    ]
    if len(times) != 2 or _TIMES_OR.search(s[times[0].end() : times[1].start()]):
        return None
    for m in times:
        marked = bool(m.group(2)) or ":" in m.group(1)
        if not (marked or _TIME_LABEL.search(s[max(0, m.start() - 40) : m.start()])):
            return None
    return _pair(*times[0].groups(), *times[1].groups())


def _chosen_span(s: str, spans: list) -> tuple[float, float] | None:
    """Which of ``spans`` (``_span_matches`` of ``s``) is the answer: the first after an answer
    phrase, else one that opens the text, else the only one written (however often)."""
    prev_end = 0
    for a, b, span in spans:
        if _SPAN_LEAD.search(s[prev_end:a]):
            if span is not None:
                return span
            break  # an unreadable span after the phrase: the other rules decide
        prev_end = b
    if _SPAN_OPENS.match(s[: spans[0][0]]) and spans[0][2] is not None:
        return spans[0][2]
    distinct = {span for _, _, span in spans}
    return distinct.pop() if len(distinct) == 1 else None


def _offered_with_another(s: str, spans: list, chosen: tuple[float, float]) -> bool:
    """``chosen`` and a different span stand side by side as alternatives (``12-18 or 20-25``,
    ``12-18, or 20-25``, ``12-18 / 20-25``), in either order."""
    return any(
        chosen in (x, y) and x != y and _span_alternatives(s[b:a2])
        for (_, b, x), (a2, _, y) in zip(spans, spans[1:], strict=False)
    )


def parse_span(text: Any) -> tuple[float, float] | None:
    """A predicted ``(start, end)`` in seconds (start ≤ end), or ``None`` if there is none.

    Which span is the answer (docs/ANSWERS.md, "Reading a span"), first hit wins: the first span
    after an answer phrase (``the answer is 12-18``); a span that opens the answer text; the one
    span written, however often it is repeated. Quoted spans never count; two different spans with
    nothing marking one, or two offered as alternatives (``12-18 or 20-25``), are no answer.
    Failing any span form, exactly two times each marked as a time."""
    if text is None:
        return None
    if isinstance(text, (list, tuple)) and len(text) == 2:
        return _proper(text)
    s = answer_text(text)[:20_000]
    spans = _span_matches(s)
    if not spans:
        return _two_times(s)
    chosen = _chosen_span(s, spans)
    if chosen is None or _offered_with_another(s, spans, chosen):
        return None
    return chosen


def _span_alternatives(between: str) -> bool:
    """Whether the text between two spans offers the second as an alternative to the first."""
    return bool(_SPAN_OR.match(between)) and not _BRACKET_ONLY.match(between)


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


# What offers a second candidate in an open-ended answer: "or", "either", "versus", a slash
# between words ("red/blue"), a hedge word after a comma or a bracket ("red, maybe blue",
# "red (perhaps blue)"), Chinese 或 / 还是. A leading "maybe red" is one uncertain candidate.
_OE_ALTERNATIVE = re.compile(
    r"(?i:\b(?:or|either|versus|vs|alternatively|otherwise)\b)"
    r"|(?<=[^\W\d_])\s*/\s*(?=[^\W\d_])"
    rf"|[,;(\[–—-]\s*(?i:{_HEDGE_WORDS})\b"
    r"|或|还是"
)


def offers_alternatives(text: Any) -> bool:
    """Whether an open-ended answer text names alternatives (``red or blue``, ``red/blue``,
    ``either a cat or a dog``, ``red, maybe blue``)."""
    return bool(_OE_ALTERNATIVE.search(str(text) if text is not None else ""))


def oe_hedged(prediction: Any, gold: Any) -> bool:
    """Whether an open-ended prediction hedges: it offers alternatives and the gold does not.

    Why: token F1 pays each named candidate's words, so ``red square or blue square`` scores 0.57
    against either colour, over the 0.5 that unlocks the tool bonus, and hedging beat committing
    whenever the model was less than 71% sure (a reward audit, 3 Dec 2026). Two candidates are no answer, as two
    letters or two spans are; a gold that itself offers alternatives (``to be or not to be``)
    keeps them readable."""
    text = answer_text(prediction)
    if not offers_alternatives(text):
        return False
    golds = gold if isinstance(gold, (list, tuple)) else [gold]
    return not any(offers_alternatives(g) for g in golds if g is not None)


def token_f1(prediction: Any, gold: Any) -> float:
    """F1 over token multisets (lower case, punctuation and articles dropped); a list of gold
    answers scores the best one. A hedge (:func:`oe_hedged`) scores 0."""
    if isinstance(gold, (list, tuple)):
        return max((token_f1(prediction, g) for g in gold), default=0.0)
    if oe_hedged(prediction, gold):
        return 0.0
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
    if oe_hedged(prediction, gold):
        return 0.0
    pred = oe_tokens(answer_text(prediction))
    return float(bool(pred) and pred == oe_tokens(str(gold) if gold is not None else ""))


# --------------------------------------------------------------------------- R_acc


def accuracy(prediction, gold, question_type, options=None, oe_metric="f1") -> float:
    """R_acc as main 9f331e2 computed it (its unknown-type error dropped)."""
    if question_type == "mcq":
        letter = extract_mcq_letter(prediction, options)
        return float(letter is not None and letter == mcq_gold_letter(gold, options))
    if question_type == "tvg":
        span = parse_span(prediction)
        ref = _proper(gold) if isinstance(gold, (list, tuple)) else parse_span(gold)
        if span is None or ref is None:
            return 0.0
        return temporal_iou(span, ref)
    return exact_match(prediction, gold) if oe_metric == "exact" else token_f1(prediction, gold)


# main 9f331e2's ``paravt.rewards.format``: a word of reasoning is a run of two or more letters,
# or one CJK character; a think is substantive with min_chars characters and min_words words
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
_REASONING_WORD = re.compile(rf"[{_CJK}]|[^\W\d_{_CJK}]{{2,}}")


def think_holds(min_chars: int, min_words: int, reasoning: str) -> bool:
    if len(reasoning) < min_chars:
        return False
    if min_words <= 0:
        return True
    return len({w.lower() for w in _REASONING_WORD.findall(reasoning)}) >= min_words


# ---------------------------------------------------------------- swapping it in


@contextlib.contextmanager
def old_rule():
    """Inside: ``paravt.rewards.compose`` and the format terms read answers and reasoning with
    the frozen rule above (and pay the tool bonus at R_acc >= threshold, whatever the answer), so
    ``ParaGRPOTrainer.score_episode`` and ``compose`` give the totals main 9f331e2 gave. Every
    other part of the composition is today's code."""
    # the modules, not the package's re-exported functions of the same names
    compose_mod = importlib.import_module("paravt.rewards.compose")
    format_mod = importlib.import_module("paravt.rewards.format")

    saved = (compose_mod.accuracy, compose_mod.bonus_earned, format_mod.ThinkRule.holds)
    # the old rule read no text after the answer: today's ``after`` is dropped
    compose_mod.accuracy = lambda *args, after="", **kwargs: accuracy(*args, **kwargs)
    compose_mod.bonus_earned = lambda pred, gold, qtype, options, acc, cfg: (
        acc >= cfg.tool_correct_threshold
    )
    format_mod.ThinkRule.holds = lambda self, reasoning: think_holds(
        self.min_chars, self.min_words, reasoning
    )
    try:
        yield
    finally:
        compose_mod.accuracy, compose_mod.bonus_earned, format_mod.ThinkRule.holds = saved
