"""R_fmt: the format reward and its Exploration-Anchoring term (docs/PROTOCOL.md §5.2).

Why it reads ``prefix + completion``: training pre-fills ``<think>`` in the prompt, so the
completion starts inside the reasoning and never contains the opener. Scoring the completion alone
(as the reference does) finds no ``<think>``, zeroes every think term and the anchor, and leaves
GRPO nothing to learn from. Here the pre-filled text is part of the scored text; if the caller
passes a whole rendered prompt, only what follows its last ``<|im_start|>assistant`` header counts
(the system prompt's own examples of tags must not).

Turns: an episode is scored as the list of its generated turns (``EpisodeRecord.turns``, each
text with its own pre-fill), never as one guessed-apart string. Tags pair up inside a turn; the
answer terms and the flow read the **final** turn; the other terms look at every turn.

Terms (constants in :class:`~paravt.rewards.config.RewardConfig`):

=====================  =====  ==============================================================
base: think            +0.2   a substantive ``<think>`` (below), closed or not
base: answer           +0.3   the final turn's last ``<answer>`` holds a letter or digit
base: answer_close     +0.2   ... and is closed by ``</answer>``
base: think_before     +0.3   a substantive ``<think>`` opens before the first call the parser
                              accepted outside ``<think>``; 0 when R_tool sees no call
base: balanced         +0.1   in every turn each tag opens before it closes, never nests, all
                              closed — and at least one pair exists (plain text earns nothing)
anchor: close          +0.4   a ``</think>`` closes a substantive ``<think>`` (in any turn)
anchor: flow           +0.3   final turn: substantive ``<think>`` → ``</think>`` → non-empty
                              closed answer
anchor: unclosed       −0.3   some turn leaves a ``<think>`` open (clipped away when the base
                              terms reach 1: docs/PROTOCOL.md §5.2)
=====================  =====  ==============================================================

"Substantive" is one rule for every think term (:class:`ThinkRule`, docs/ANSWERS.md
"Reasoning"): at least ``think_min_chars`` (10) visible characters of reasoning, tags removed (the
reference's rule), holding at least ``think_min_words`` (3) distinct words of a language, at least
``think_min_new_words`` (2) of them not in the question, and one that is not grammatical (ours).
Words of a language, in any script (``paravt.rewards.language``): runs of one script's letters
(Han and kana one character at a time, Thai cut at its grammatical words) counted only where the
same think holds a grammatical word of that script (``Нужно посмотреть, что в середине`` is
Russian; ``ывапролдж фывапр`` and ``It is ывапролдж`` hold no Russian); not words: invisible
characters (Unicode's default-ignorable code points such as the Hangul filler U+3164), one letter
or syllable repeated (``aa``, ``lala``), a word or phrase said two and a half times in a row or more
(``no no no``, a sentence looped), consonant runs (``hmm``), Lorem ipsum's placeholder Latin. Why
it matters here more than in the reference: the pre-fill supplies a ``<think>`` opener to every
turn, so a term that needed only the opener (or only a ``</think>`` after it) would be paid for
``<think>\n</think>`` or ``<think>\n<tool_call>…`` with no reasoning at all; and ten characters
of anything (``aaaaaaaaaa``, ``ㅤㅤㅤ`` in U+3164, the question pasted back, ``lorem ipsum
dolor``, random Cyrillic or Hangul) paid every think term, 2.80 in all with a correct answer after
one call (reward audits of 3 and 4 Dec 2026). The rule refuses filler that costs nothing to write;
it cannot tell sense from a grammatical sentence of nonsense, and does not try.

R_fmt = clip(base + anchor_lambda · anchor, 0, 1). The empty-tag exploit
``<think></think><answer></answer>`` earns no answer credit (answer, answer_close and flow need a
non-empty answer) and no think credit (the think is empty); it keeps balanced tags (+0.1). An
empty ``<tool_call></tool_call>``, or a call written inside ``<think>``, is no call: it earns no
think-before-call credit.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from paravt.grammar import parse_turn
from paravt.rewards.config import RewardConfig
from paravt.rewards.language import GRAMMAR_WORDS, LOREM_IPSUM, Word, language_words

__all__ = [
    "GRAMMAR_WORDS",
    "LOREM_IPSUM",
    "FormatTerms",
    "ThinkRule",
    "format_reward",
    "format_score",
    "format_terms",
    "open_think_turns",
    "reasoning_words",
    "scored_text",
    "substantive_close_turns",
    "visible_text",
]

_TAG = re.compile(r"<(/?)(think|answer|tool_call|tool_code|tool_response)>")
_WORD = re.compile(r"[^\W_]")
# Unicode's default-ignorable code points (DerivedCoreProperties.txt, Default_Ignorable_Code_Point):
# characters that render as nothing, among them the Hangul fillers U+115F, U+1160, U+3164 and
# U+FFA0, which Unicode classes as letters. With the braille blank U+2800 and every format,
# control (but tab and newline), private-use and unassigned character, they are not text.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)
_NOT_TEXT = frozenset({"Cf", "Co", "Cn", "Cs"})
_ASSISTANT_HEADER = "<|im_start|>assistant"


@dataclass(frozen=True)
class FormatTerms:
    """Each term's contribution (already multiplied by its constant)."""

    think: float = 0.0
    answer: float = 0.0
    answer_close: float = 0.0
    think_before_call: float = 0.0
    balanced: float = 0.0
    anchor_close: float = 0.0
    anchor_flow: float = 0.0
    anchor_unclosed: float = 0.0

    @property
    def base(self) -> float:
        return self.think + self.answer + self.answer_close + self.think_before_call + self.balanced

    @property
    def anchor(self) -> float:
        """The anchor term before λ_anchor, in [−0.3, 0.7] with the default constants."""
        return self.anchor_close + self.anchor_flow + self.anchor_unclosed


def scored_text(prefix: str | None, completion: str | None) -> str:
    """The text the format reward scores: the assistant pre-fill followed by the completion.

    The pre-fill is counted once: when the completion already starts with it (the engine records
    each turn's text with its pre-fill), it is not prepended again — a doubled ``<think>`` would
    read as a nested, never-closed think."""
    prefix = prefix or ""
    completion = completion or ""
    cut = prefix.rfind(_ASSISTANT_HEADER)
    if cut >= 0:
        prefix = prefix[cut + len(_ASSISTANT_HEADER) :]
    head = prefix.strip()
    if head and completion.lstrip().startswith(head):
        return completion
    return prefix + completion


def _turn_texts(completion: str | Sequence[str] | None, prefix: str | None) -> list[str]:
    """The scored text of each turn. A string is one turn; a sequence holds one text per
    generated turn (``EpisodeRecord.turns``), each scored with its own pre-fill counted once."""
    if isinstance(completion, (list, tuple)):
        texts = [t if isinstance(t, str) else "" for t in completion] or [""]
    else:
        texts = [completion if isinstance(completion, str) else ""]
    return [scored_text(prefix, t) for t in texts]


@dataclass(frozen=True)
class _TurnTags:
    """The structural tags of one turn's scored text and what they pair up into."""

    text: str
    tags: list[tuple[int, int, str, bool]]  # (start, end, name, closing)
    think_pairs: list[tuple[int, int, int, int]]  # (open_start, open_end, close_start, close_end)
    open_thinks: list[tuple[int, int]]  # openers never closed in this turn
    answers: list[tuple[int, int, bool, bool]]  # (open_start, open_end, closed, non-empty)


def _turn_tags(text: str) -> _TurnTags:
    tags = [(m.start(), m.end(), m.group(2), m.group(1) == "/") for m in _TAG.finditer(text)]
    # a closer closes the most recent open think of the same turn
    think_pairs: list[tuple[int, int, int, int]] = []
    open_thinks: list[tuple[int, int]] = []
    for start, end, name, closing in tags:
        if name != "think":
            continue
        if not closing:
            open_thinks.append((start, end))
        elif open_thinks:
            o_start, o_end = open_thinks.pop()
            think_pairs.append((o_start, o_end, start, end))
    # an answer opener is closed when the next answer tag after it is a closer; otherwise its
    # body runs to the next opener or the end
    answers: list[tuple[int, int, bool, bool]] = []
    answer_tags = [t for t in tags if t[2] == "answer"]
    for k, (start, end, _, closing) in enumerate(answer_tags):
        if closing:
            continue
        nxt = answer_tags[k + 1] if k + 1 < len(answer_tags) else None
        body = text[end : nxt[0]] if nxt else text[end:]
        closed = bool(nxt and nxt[3])
        # a letter in a compatibility form (Ⓐ, 𝐁) is a letter: NFKC first, as the reader does
        held = unicodedata.normalize("NFKC", visible_text(_TAG.sub("", body)))
        answers.append((start, end, closed, bool(_WORD.search(held))))
    return _TurnTags(text, tags, think_pairs, open_thinks, answers)


def visible_text(text: str) -> str:
    """``text`` without the characters that render as nothing (:data:`_INVISIBLE`, and every
    format, private-use, unassigned or control character but tab and newline)."""
    text = _INVISIBLE.sub("", text)
    return "".join(
        c
        for c in text
        if c in "\t\n"
        or unicodedata.category(c) not in _NOT_TEXT
        and unicodedata.category(c) != "Cc"
    )


def _counted_words(text: str) -> list[Word]:
    """The words of ``text`` that count as reasoning: :func:`language_words` of its visible
    text, kept only in the scripts whose grammatical words are among them (``It is ывапролдж``:
    the Cyrillic run has no Russian grammatical word beside it, so it is no Russian)."""
    words = language_words(visible_text(text))
    grammatical = {w.script for w in words if w.grammatical}
    return [w for w in words if w.script in grammatical]


def reasoning_words(text: str) -> set[str]:
    """The distinct words of a piece of reasoning, lower case: words of a language in any script
    (``paravt.rewards.language``: loops, runs of characters and letters of a script with none
    of its grammatical words left out)."""
    return {w.text for w in _counted_words(text)}


@dataclass(frozen=True)
class ThinkRule:
    """What makes a think substantive (docs/ANSWERS.md, "Reasoning"): at least ``min_chars``
    visible characters, tags removed, holding at least ``min_words`` distinct words of a language
    (:func:`reasoning_words`: each in a script whose grammatical words are there), at least
    ``min_new_words`` of them not in the question, and at least one that is not grammatical
    (``It is the`` says nothing). ``min_words = 0`` is the characters rule alone."""

    min_chars: int = 10
    min_words: int = 3
    min_new_words: int = 2
    question_words: frozenset[str] = frozenset()

    @classmethod
    def of(cls, cfg: RewardConfig, question: str | None = None) -> ThinkRule:
        asked = frozenset(w.text for w in language_words(visible_text(question or "")))
        return cls(cfg.think_min_chars, cfg.think_min_words, cfg.think_min_new_words, asked)

    def holds(self, reasoning: str) -> bool:
        return _holds(self, reasoning)


@lru_cache(maxsize=4096)
def _holds(rule: ThinkRule, reasoning: str) -> bool:
    """:meth:`ThinkRule.holds`, cached: every think term asks it of the same reasoning."""
    if len(visible_text(reasoning).strip()) < rule.min_chars:
        return False
    if rule.min_words <= 0:
        return True
    words = _counted_words(reasoning)
    distinct = {w.text for w in words}
    return (
        len(distinct) >= rule.min_words
        and len(distinct - rule.question_words) >= rule.min_new_words
        and any(w.content for w in words)
    )


def _reasoning(turn: _TurnTags, open_end: int, close_start: int | None) -> str:
    """The reasoning of one think: a closed think's body without tags; a never-closed think's
    body up to the next structural tag (or the end of the turn), since what the model wrote after
    it moved on to a call or an answer is not reasoning."""
    text = turn.text
    if close_start is not None:
        return _TAG.sub("", text[open_end:close_start]).strip()
    nxt = _TAG.search(text, open_end)
    return text[open_end : nxt.start() if nxt else len(text)].strip()


def _substantive_pairs(turn: _TurnTags, rule: ThinkRule) -> list[tuple[int, int, int, int]]:
    """The closed thinks of a turn that hold substantive reasoning."""
    return [p for p in turn.think_pairs if rule.holds(_reasoning(turn, p[1], p[2]))]


def _substantive_opens(turn: _TurnTags, rule: ThinkRule) -> list[tuple[int, int]]:
    """The never-closed thinks of a turn that hold substantive reasoning."""
    return [o for o in turn.open_thinks if rule.holds(_reasoning(turn, o[1], None))]


def _substantive(turn: _TurnTags, rule: ThinkRule) -> bool:
    """A substantive think, closed or not."""
    return bool(_substantive_pairs(turn, rule) or _substantive_opens(turn, rule))


def _think_before_first_call(turns: list[_TurnTags], rule: ThinkRule) -> bool:
    """A substantive ``<think>`` opens before the first call the parser accepted (outside
    ``<think>``, well-formed, known tool): in an earlier turn or earlier in the same turn. A bare
    opener earns nothing: the pre-fill supplies one to every turn, and ``<think>\\n<tool_call>…``
    holds no reasoning."""
    thought = False
    for turn in turns:
        opens = [o[0] for o in _substantive_pairs(turn, rule)]
        opens += [o[0] for o in _substantive_opens(turn, rule)]
        calls = parse_turn(turn.text).calls
        if calls:
            first = min(c.span[0] for c in calls)
            return thought or any(s < first for s in opens)
        thought = thought or bool(opens)
    return False


#: the constant of ``RewardConfig`` each term pays when earned
_TERM_CONSTANT = {
    "think": "think_bonus",
    "answer": "answer_bonus",
    "answer_close": "answer_close_bonus",
    "think_before_call": "think_before_call_bonus",
    "balanced": "balanced_bonus",
    "anchor_close": "anchor_close",
    "anchor_flow": "anchor_flow",
    "anchor_unclosed": "anchor_unclosed",
}


def _flows(final: _TurnTags, rule: ThinkRule) -> bool:
    """A substantive think closes before a closed, non-empty answer in the final turn."""
    return any(
        a_start > cs and a_ok and closed
        for (_, _, cs, _) in _substantive_pairs(final, rule)
        for (a_start, _, closed, a_ok) in final.answers
    )


def _earned(turns: list[_TurnTags], rule: ThinkRule, calls_made: bool | None) -> dict[str, bool]:
    """Which format terms an episode earns (see :func:`format_terms`)."""
    # the answer terms and the flow read the final turn: an earlier tool turn's answer is not
    # the episode's answer (docs/PROTOCOL.md §4)
    final = turns[-1]
    last = final.answers[-1] if final.answers else None
    answer_ok = bool(last and last[3])
    return {
        "think": any(_substantive(t, rule) for t in turns),
        "answer": answer_ok,
        "answer_close": bool(last is not None and answer_ok and last[2]),
        "think_before_call": calls_made is not False and _think_before_first_call(turns, rule),
        "balanced": any(t.tags for t in turns) and all(_balanced(t.tags) for t in turns),
        "anchor_close": any(_substantive_pairs(t, rule) for t in turns),
        "anchor_flow": _flows(final, rule),
        "anchor_unclosed": any(t.open_thinks for t in turns),
    }


def format_terms(
    text: str | Sequence[str],
    cfg: RewardConfig | None = None,
    prefix: str = "",
    calls_made: bool | None = None,
    question: str | None = None,
) -> FormatTerms:
    """All format terms of an episode. Never raises on any input.

    ``text`` is one string (one turn) or one text per generated turn; ``prefix`` is the
    assistant pre-fill of every turn (counted once per turn, see :func:`scored_text`).
    ``calls_made`` is R_tool's notion of "a call exists" (``ToolCounts.called``):
    ``False`` zeroes the think-before-call term whatever the text says; ``None`` reads it from
    the text alone. ``question``, when given, is the question the episode answers: reasoning
    that only restates it is no reasoning (:class:`ThinkRule`).
    """
    cfg = cfg or RewardConfig()
    turns = [_turn_tags(t) for t in _turn_texts(text, prefix)]
    earned = _earned(turns, ThinkRule.of(cfg, question), calls_made)
    return FormatTerms(
        **{term: getattr(cfg, _TERM_CONSTANT[term]) if ok else 0.0 for term, ok in earned.items()}
    )


def substantive_close_turns(
    text: str | Sequence[str],
    prefix: str = "",
    min_chars: int | None = None,
    min_words: int | None = None,
) -> list[bool]:
    """For each turn: does a ``</think>`` in it close a substantive think (``min_chars`` and
    ``min_words`` default to ``RewardConfig``'s)? The token-level anchor pays its ``</think>``
    bonus only in those turns, as the anchor's close term does."""
    default = RewardConfig()
    rule = ThinkRule(
        default.think_min_chars if min_chars is None else min_chars,
        default.think_min_words if min_words is None else min_words,
        default.think_min_new_words,
    )
    return [bool(_substantive_pairs(_turn_tags(t), rule)) for t in _turn_texts(text, prefix)]


def open_think_turns(text: str | Sequence[str], prefix: str = "") -> list[bool]:
    """For each turn (as :func:`format_terms` splits them): does it leave a ``<think>`` open?
    The token-level anchor puts its penalty on those turns."""
    return [bool(_turn_tags(t).open_thinks) for t in _turn_texts(text, prefix)]


def _balanced(tags: list[tuple[int, int, str, bool]]) -> bool:
    """Every tag kind alternates open, close, open, close … and ends closed."""
    state: dict[str, bool] = {}
    for _, _, name, closing in tags:
        is_open = state.get(name, False)
        if closing != is_open:
            return False
        state[name] = not closing
    return not any(state.values())


def format_score(base: float, anchor: float, cfg: RewardConfig | None = None) -> float:
    """R_fmt = clip(base + λ_anchor · anchor, 0, 1)."""
    cfg = cfg or RewardConfig()
    return min(1.0, max(0.0, base + cfg.anchor_lambda * anchor))


def format_reward(
    text: str | Sequence[str], cfg: RewardConfig | None = None, prefix: str = ""
) -> tuple[float, float]:
    """``(fmt_base, anchor)`` of an episode (see :func:`format_terms`); combine them with
    :func:`format_score`."""
    terms = format_terms(text, cfg, prefix)
    return terms.base, terms.anchor
