"""Reading an answer and scoring it: MCQ letters, temporal spans, open-ended text (R_acc).

One principle reads every question type (docs/ANSWERS.md, "One candidate"): **an answer counts
only when it commits to exactly one candidate — one option, one span, one phrase.** The reader
collects every candidate the answer text names, merges the mentions that name the same one,
drops those the text rejects (``A is wrong``, ``not C``, ``It can't be B``, a struck-through
``~~B~~``), and reads the one left; none left, or two or more, is no answer — a string the reader
cannot decide between two candidates is no answer, never a guess. What joins two candidates never
matters — ``B or C``, ``B | C``, ``B 还是 C``, ``Answer: B\nAnswer: C``, ``B. He pours milk`` (a
letter beside another option's text), ``red blue square``: each names two, and each scores 0.
Why: a hedge that read as one of its candidates earned full marks whenever that one was right,
so GRPO would learn to hedge; under this rule a hedge never earns more than a committed wrong
answer (the property ``tests/rewards/test_reward_hedges.py`` checks on generated hedges).

Before any rule, the answer is normalised (``paravt.rewards.normalise``): NFKC, look-alike
letters read as the Latin letter they look like (``Ｂ``, ``𝐁``, Greek ``Β`` are B; ``B or С``
with a Cyrillic С names two), struck-through text deleted. Rejection is negation with its scope
(``paravt.rewards.candidates``). What the turn writes after its closed answer is read with it
(:func:`accuracy`'s ``after``): a withdrawal (``Wait, it is C``) makes it no answer.

- **Options** (:func:`extract_mcq_letter`): a candidate is named by its letter standing as a
  token, in either case (``B``, ``(b)``, ``the answer is b``), or by its own text; ``A``/``I``
  before an ordinary word is the article/pronoun unless the answer names another candidate
  (then it is one more, and the answer is none).
- **Spans** (:func:`parse_span`, ``paravt.rewards.spans``): every span written, in any notation
  (``3-7 s``, ``3秒到7秒``, SRT timestamps, milliseconds); the same span written twice is one.
- **Phrases** (:func:`oe_hedged`): an open-ended answer may hold no more phrases than the gold
  (split at every joiner), not the gold's content words and more (a list joined by nothing:
  ``red blue square``), not more numbers than the gold; and when the gold holds a number the
  answer must hold one (a unit alone, ``seconds``, is no number).

The text read is :func:`answer_text`, the parser's docs/PROTOCOL.md §4 extraction — the same text
the engine records and evaluation scores: without an ``<answer>`` tag that is all of the text after
``</think>``. ``temporal_iou`` (training) and ``temporal_iou_hull`` (Charades-STA evaluation) are
``paravt.rewards.spans``'s, exported here.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from paravt.errors import deprecated
from paravt.grammar import answer_tail, extract_answer
from paravt.rewards.candidates import Mention, committed
from paravt.rewards.language import ARTICLES
from paravt.rewards.normalise import lookalike_form, nfkc_form
from paravt.rewards.spans import proper_span, span_from_text, temporal_iou, temporal_iou_hull
from paravt.schema.questions import LETTERS, QUESTION_TYPES, UnknownQuestionTypeError

__all__ = [
    "FUNCTION_WORDS",
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
    "temporal_iou",
    "temporal_iou_hull",
    "token_f1",
]


def __getattr__(name: str) -> object:
    """The question vocabulary this reader held once answers from ``paravt.schema``, with the
    house's deprecation line (``LETTERS``, ``QUESTION_TYPES`` and ``UnknownQuestionTypeError``
    are this reader's own imports, so they still resolve quietly)."""
    if name in ("QuestionType", "TooFewOptionsError", "TooManyOptionsError", "require_letterable"):
        from paravt import schema

        deprecated(f"paravt.rewards.answers.{name}", f"use paravt.schema.{name}")
        return getattr(schema, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# --------------------------------------------------------------------------- answer text


def answer_text(prediction: object) -> str:
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


def _forms(text: Any) -> tuple[str, str]:
    """The answer text as the readers read it, in two forms of the same length: extracted
    (docs/PROTOCOL.md §4), struck-through parts deleted, NFKC, markup removed — the *words* form,
    where negations, joiners and withdrawals are matched as the writer wrote them (``не``,
    ``или``); and the same with look-alike letters read as Latin — the *letters* form, where
    options, spans and phrases are read (``paravt.rewards.normalise``)."""
    words = _MARKUP.sub(" ", nfkc_form(answer_text(text)))[:20_000]
    return words, lookalike_form(words)


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
_JOINING_PATTERN = "|".join(sorted(JOIN_WORDS, key=len, reverse=True))
_CONNECTORS = JOIN_WORDS | frozenset(
    """is was are were be because since as which that would should will seems seem appears
    appear looks look might may could can must too then""".split()
)
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]|[^\W_]+", re.UNICODE)


def _words(text: str) -> list[tuple[int, int, str]]:
    """Word tokens of ``text`` with their characters (CJK characters one by one), lower case."""
    return [(m.start(), m.end(), m.group(0).lower()) for m in _TOKEN.finditer(text)]


def _option_mentions(s: str, options: Sequence[Any], n: int) -> list[Mention]:
    """Where the answer names an option by its own text (its words in a row, any case), leaving
    out one inside a longer option's text there ("dark red" names "dark red", not also "red").
    Texts under 3 characters count only as the whole answer."""
    tokens = _words(s)
    words = [t[2] for t in tokens]
    found: list[Mention] = []
    for i, text in enumerate(_option_texts(options)[:n]):
        need = [w for _, _, w in _words(text)]
        if not need or (len("".join(need)) < 3 and need != words):
            continue
        k = len(need)
        for j in range(len(words) - k + 1):
            if words[j : j + k] == need:
                found.append(Mention(tokens[j][0], tokens[j + k - 1][1], i))
    return _outermost(found)


def _outermost(found: list[Mention]) -> list[Mention]:
    """``found`` without the mentions that lie inside a longer one (one pass in text order)."""
    out: list[Mention] = []
    widest: Mention | None = None  # the earlier mention reaching furthest
    for m in sorted(found, key=lambda m: (m.start, -m.end)):
        inside = (
            widest is not None
            and widest.end >= m.end
            and widest.end - widest.start > m.end - m.start
        )
        if not inside:
            out.append(m)
        if widest is None or m.end > widest.end:
            widest = m
    return out


def _option_texts(options: Sequence[Any]) -> list[str]:
    """Option texts without their own ``A.``/``(A)`` labels, normalised as answers are
    (``paravt.rewards.normalise``), so an option and an answer that name it match."""
    out = []
    for i, opt in enumerate(options):
        text = lookalike_form(nfkc_form(str(opt)))
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


def _letter_mentions(s: str, words: str, valid: str, taken: list[Mention]) -> tuple[list, list]:
    """The letters the answer names as tokens (outside option texts), in either case, split into
    sure ones and capitals that may be the article or pronoun (``A man``, ``I think``). ``s``
    is the letters form of the answer, ``words`` its words form (:func:`_forms`)."""
    sure, maybe = [], []
    text_starts = {t.start for t in taken}
    hyphened = [m for m in _LETTER_HYPHENED.finditer(s) if m.end() in text_starts]
    for m in [*_LETTER.finditer(s), *hyphened]:  # order is committed()'s to set
        letter = m.group(1)
        if letter.upper() not in valid or any(t.start <= m.start() < t.end for t in taken):
            continue
        kind = _article(words, m.end(), letter)
        mention = Mention(m.start(), m.end(), LETTERS.index(letter.upper()))
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
    words, s = _forms(text)
    if not s.strip():
        return None
    n = min(len(options), len(LETTERS)) if options else len(LETTERS)
    named = _option_mentions(s, options, n) if options else []
    sure, maybe = _letter_mentions(s, words, LETTERS[:n], named)
    mentions = named + sure
    if mentions:
        mentions += maybe  # "A man …" is the article only when nothing else is named
    key = committed(words, mentions)
    return LETTERS[key] if key is not None else None


def mcq_gold_letter(gold: Any, options: Sequence[Any] | None = None) -> str | None:
    """The gold letter from a letter (``"B"``, ``"(B)"``), a 0-based index, or the option text."""
    if isinstance(gold, bool) or gold is None:
        return None
    if isinstance(gold, int):
        return LETTERS[gold] if 0 <= gold < len(LETTERS) else None
    return extract_mcq_letter(str(gold), options)


# --------------------------------------------------------------------------- spans


def parse_span(text: Any) -> tuple[float, float] | None:
    """The ``(start, end)`` in seconds (start ≤ end) an answer commits to, or ``None``.

    The one-candidate rule (module docstring): every span written, the same span written twice
    counted once (``12.5-18 s (0:12.5-0:18)``), an explicitly rejected one dropped (``3-7, not
    9-12``); exactly one left is the answer, two different ones in any layout are none
    (``3-7 or 9-12``, ``3-7. 9-12.``, ``3 - 7 s (9 - 12 s)``). Failing any span form, two times
    labelled as start and end. The notations are ``paravt.rewards.spans``'s (``3秒到7秒``, SRT
    timestamps, milliseconds). A ``(start, end)`` pair of numbers is taken as it is."""
    if text is None:
        return None
    if isinstance(text, (list, tuple)) and len(text) == 2:
        return proper_span(text)
    return span_from_text(*reversed(_forms(text)))


# --------------------------------------------------------------------------- open-ended

_ARTICLES = frozenset({"a", "an", "the"})
#: Grammatical words: articles, pronouns, forms of be/do/have, modals, the commonest conjunctions
#: and question words, in English, then Chinese, Japanese and Korean particles (one character
#: each, as CJK text is read character by character), and the articles of Spanish, French,
#: German, Italian, Portuguese and Dutch. What every sentence needs and no answer is about: an
#: open-ended answer's *content* words, the ones the tool bonus asks for and the superset rule
#: counts, are its other words. Negations and prepositions are not here: "not" and "under" change
#: what an answer says. (The think terms read every language's grammatical words:
#: ``paravt.rewards.language``.)
_FUNCTION_WORDS_EN_CJK = frozenset(
    """a an the this that these those it its i me my we us our you your he him his she her they
    them their there here is are was were be been being am do does did done has have had will
    would shall should can could may might must of to and or but so as if because than then also
    just very what which who whom whose why how when where
    的 是 了 我 你 他 她 它 们 这 那 有 也 都 就 要 会 个 着 过 吗 呢 吧
    の は を が に で た て だ す
    은 는 이 가 을 를 의 에""".split()
)
FUNCTION_WORDS = _FUNCTION_WORDS_EN_CJK | ARTICLES
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
    rf"|(?i:(?<![^\W_])(?:{_JOINING_PATTERN})(?![^\W_]))"
    r"|答案(?:应该是|应为|是|为)?|或者|还是|以及|也许|或许|可能|或|和|与|及|跟|または|それとも|か|や"
    r"|[^\w\s'’.,:/-]|(?<![^\W_])['’]|['’](?![^\W_])|(?<!\d)[-.,:/]|[-.,:/](?!\d)|\n",
    re.UNICODE,
)
# A phrase that opens with a negation rejects its words ("red square, not blue square").
_OE_NEGATION = frozenset(
    "not no never nor without except instead rather nicht kein keine pas non не 不是 而不是 并非 不".split()
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
    for piece in _OE_JOIN.split(_forms(text)[0]):
        words = [lookalike_form(w.lower()) for w in _OE_WORD.findall(piece or "")]
        if words and words[0] not in _OE_NEGATION:
            kept = [w for w in words if w not in _ARTICLES]
            if kept:
                out.append(kept)
    return out


#: English number words read as their numbers when the gold holds a number ("five" for "5").
_NUMBER_WORDS = {
    w: str(i)
    for i, w in enumerate(
        """zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen
        fifteen sixteen seventeen eighteen nineteen twenty""".split()
    )
}
_NUMBER_WORDS |= {
    w: f"{10 * i}" for i, w in enumerate("thirty forty fifty sixty seventy".split(), 3)
}
_NUMBER_WORDS |= {w: f"{10 * i}" for i, w in enumerate("eighty ninety".split(), 8)}
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _number(word: str) -> str | None:
    """``word`` as a number in one canonical form (``5``, ``5.0`` and ``05`` are ``5``), or
    None."""
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    if _NUMBER.fullmatch(word):
        return f"{float(word):g}"
    return None


def _numbers(words: list[str]) -> set[str]:
    return {n for n in map(_number, words) if n is not None}


def _hedged_against(prediction: Any, gold: Any) -> bool:
    """Whether the answer names more than the one gold ``gold`` asks for (:func:`oe_hedged`)."""
    pred_phrases, gold_phrases = oe_phrases(prediction), oe_phrases(gold)
    if len(pred_phrases) > max(1, len(gold_phrases)):
        return True
    have, want = oe_content_words(prediction), oe_content_words(gold)
    if want and have > want:
        return True
    want_n = _numbers([w for p in gold_phrases for w in p])
    return bool(want_n) and len(_numbers([w for p in pred_phrases for w in p])) > len(want_n)


def oe_hedged(prediction: Any, gold: Any) -> bool:
    """Whether an open-ended answer names more candidates than the gold (every gold of a list)
    asks for: the one-candidate rule for phrases (module docstring), whatever joins them.

    - more phrases than the gold: ``red | blue square``, ``red square (blue square)`` and
      ``red square; blue square`` are two phrases against the one of ``a red square``;
    - the gold's content words and more: ``red blue square`` holds ``red square`` and a word
      that may be the other candidate's (``blue square``), with no joiner at all;
    - more numbers than the gold: ``3 4 5`` for ``4``.

    ``salt or pepper`` against ``salt and pepper`` is none of these."""
    golds = gold if isinstance(gold, (list, tuple)) else [gold]
    golds = [g for g in golds if g is not None]
    return bool(golds) and all(_hedged_against(prediction, g) for g in golds)


def _no_number(prediction: Any, gold: Any) -> bool:
    """A gold that holds a number and an answer that holds none: a unit alone (``seconds`` for
    ``5 seconds``) is no answer, or it would beat every wrong number."""
    return bool(_numbers(_oe_words(gold))) and not _numbers(_oe_words(prediction))


def _compared(prediction: Any, gold: Any) -> tuple[list[str], list[str]] | None:
    """The answer's and the gold's words as F1 and exact match compare them (numbers in one
    form when the gold holds one), or None when the answer is no answer against ``gold``."""
    if gold is None or oe_hedged(prediction, gold) or _no_number(prediction, gold):
        return None
    pred, ref = _oe_words(prediction), _oe_words(gold)
    if _numbers(ref):
        pred = [_number(w) or w for w in pred]
        ref = [_number(w) or w for w in ref]
    return pred, ref


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
    words counted); a list of golds scores the best one. A hedge (:func:`oe_hedged`) scores 0,
    and so does an answer without a number when the gold has one."""
    if isinstance(gold, (list, tuple)):
        return max((token_f1(prediction, g) for g in gold), default=0.0)
    words = _compared(prediction, gold)
    return overlap_f1(*words) if words else 0.0


def exact_match(prediction: Any, gold: Any) -> float:
    """1.0 when the answer's words equal the gold's (any of a list of golds); a hedge is 0."""
    if isinstance(gold, (list, tuple)):
        return max((exact_match(prediction, g) for g in gold), default=0.0)
    words = _compared(prediction, gold)
    return float(bool(words and words[0] and words[0] == words[1]))


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


# --------------------------------------------------------------------------- after the answer

# Words that take back what was just answered, opening a sentence after the closed answer:
# English, German, French, Spanish, Russian, Chinese, Japanese ("Wait", "Actually, C", "Sorry, I
# meant C", "No.", "等等", "其实"). The principle (docs/ANSWERS.md, "After the answer"): an
# answer is the model's last word on the question; one it withdraws is no answer.
_WITHDRAWN = re.compile(
    r"(?:^|[.!?。！？\n])\W*(?i:(?:hmm+|oh|ah|uh|um+|well|oops)\W+)?"
    r"(?i:(?:wait|actually|sorry|correction|scratch\s+that|i\s+meant|i\s+was\s+wrong"
    r"|that(?:['’]s|\s+is|\s+was)\s+(?:wrong|incorrect|not\s+right)|on\s+second\s+thought"
    r"|let\s+me\s+(?:reconsider|rethink|re-?check)|never\s*mind|i\s+take\s+(?:it|that)\s+back"
    r"|no|nope|warte|eigentlich|korrektur|nein|en\s+fait|non|espera|en\s+realidad|perdón"
    r"|corrección|подожди|стоп|на\s+самом\s+деле|извини\w*|поправка|нет)(?![^\W_]))"
    r"|等等|等一下|不对|其实|抱歉|更正|我错了|待って|訂正"
)
# A tail that goes on naming phrases: it opens with a joiner ("<answer>red</answer> or blue").
_OE_CONTINUES = re.compile(
    r"\s*(?:[,;|/&+~]|或|还是|和"
    rf"|(?i:(?:{_JOINING_PATTERN})(?![^\W_])))"
)


def _with_tail(prediction: Any, after: str, question_type: str) -> Any:
    """The answer read together with what the turn writes after it (``after``, and the tail of
    ``prediction`` when it is a whole turn): None when the tail withdraws the answer; for an
    option or a span, the answer and its tail as one text (a candidate named after the answer is
    one more, ``<answer>B</answer> C`` names two); for an open-ended answer, joined only when
    the tail opens with a joiner (an explanation after it is no phrase of the answer)."""
    own = answer_tail(str(prediction)) if prediction is not None else ""
    tail = "\n".join(t for t in (own, after or "") if t.strip())
    if not tail:
        return prediction
    read = nfkc_form(tail)
    if _WITHDRAWN.search(read):
        return None
    if question_type == "oe" and not _OE_CONTINUES.match(read):
        return prediction
    return f"{answer_text(prediction)}\n{tail}"


# --------------------------------------------------------------------------- R_acc


def accuracy(
    prediction: Any,
    gold: Any,
    question_type: str,
    options: Sequence[Any] | None = None,
    oe_metric: str = "f1",
    after: str = "",
) -> float:
    """R_acc ∈ [0, 1] by question type (``mcq`` | ``tvg`` | ``oe``). ``after`` is what the turn
    wrote after its closed answer (``paravt.grammar.answer_tail``), when ``prediction`` is the
    extracted answer alone: a tail that withdraws the answer makes it no answer, and a candidate
    it names is one more (:func:`_with_tail`)."""
    if question_type in QUESTION_TYPES:
        prediction = _with_tail(prediction, after, question_type)
        if prediction is None:
            return 0.0
    if question_type == "mcq":
        letter = extract_mcq_letter(prediction, options)
        return float(letter is not None and letter == mcq_gold_letter(gold, options))
    if question_type == "tvg":
        span = parse_span(prediction)
        ref = proper_span(gold) if isinstance(gold, (list, tuple)) else parse_span(gold)
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
