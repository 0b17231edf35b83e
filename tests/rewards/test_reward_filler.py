"""Reasoning that is filler earns nothing over no reasoning at all; short real reasoning earns the
think terms (docs/ANSWERS.md, "Reasoning"): the rule as a property on generated filler.

**The property.** The same tool episode (a correct answer after one executed call, every tag in
place) is scored by ``paravt.rewards.compose`` — the composition ``score_episode`` calls, with the
question passed as the trainer passes it — three ways: with filler ``F`` in both thinks, with
nothing in them, with real reasoning. Then ``T(F) == T(nothing) < T(real)``: filler earns none of
the think terms (think, think-before-call, the anchor's close and flow), and with the paper's
constants that is 2.4 against 2.8.

Filler is generated, never listed: invisible letters (Unicode's default-ignorable code points, the
Hangul fillers, zero-width characters) with spaces, digits and punctuation; the question pasted
back (as asked, in other case, without its mark, repeated, with one word added); one letter or one
syllable repeated (``aa bb cc dd``, ``la la la``, ``lalala``); windows of the Lorem ipsum passage;
and mixtures of these. 1,000 examples (``max_examples=1000``, derandomized). Filler in other
scripts, alphabets recited and looped sentences: ``test_reward_languages.py``. The real reasonings are a fixed set
of short sentences of the kinds a model writes before and after its calls, which must all pass.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reward_episodes import SETTINGS

from paravt.rewards import RewardConfig, compose
from paravt.schema.tools import ToolCounts

CFG = RewardConfig()
PREFILL = "<think>\n"
CALL = (
    '<tool_call>{"name": "crop_video", "arguments": '
    '{"video_path": "video", "start_time": 0, "end_time": 10}}</tool_call>'
)
EXECUTED = ToolCounts(parseable_calls=1, executed_ok=1)
OPTIONS = ["cyan", "red", "yellow", "green"]
QUESTIONS = [
    "What colour was the square that appeared briefly?",
    "When does the coloured square appear?",
    "What does the man do after he opens the door?",
    "How many people enter the room in the video?",
    "Which object does the woman pick up first?",
    "Why does the dog run away at the end of the clip?",
    "视频中出现的方块是什么颜色？",
]


def total(reasoning: str, question: str) -> float:
    turns = [f"{reasoning}</think>\n{CALL}", f"{reasoning}</think>\n<answer>red</answer>"]
    r = compose(PREFILL, turns, EXECUTED, "B", "mcq", OPTIONS, CFG, question=question)
    assert r.acc == 1.0 and r.tool == pytest.approx(0.8)  # the answer and the call are real
    return r.total


NONE = {q: total("", q) for q in QUESTIONS}
assert all(v == pytest.approx(2.4) for v in NONE.values())


# --------------------------------------------------------------------------- generated filler

_INVISIBLE = (
    "\u3164\u115f\u1160\uffa0\u200b\u200c\u200d\u2060\ufeff\u00ad\u034f\u180e\u2800"
    "\u2061\u2062\u2063\u2064\u206a\u206f\ufe0f\U000e0020\U000e0041"
)
invisible = st.text(
    alphabet=st.sampled_from(list(_INVISIBLE) + list(" \n.,!?-0123456789")), min_size=10
).filter(lambda t: any(c in _INVISIBLE for c in t))


@st.composite
def pasted_questions(draw, question: str) -> str:
    """The question written back: as asked, in another case, without its mark, repeated, with
    at most one word or label added before or after it (two added words are two words the
    question does not hold, which the rule counts as reasoning: docs/ANSWERS.md)."""
    q = draw(
        st.sampled_from([question, question.lower(), question.upper(), question.rstrip("?？")])
    )
    q = draw(st.sampled_from([" ", "\n", " ... "])).join([q] * draw(st.integers(1, 3)))
    word = draw(st.sampled_from(["ok", "hmm", "so", "yes", "right", "Question", "Q", "嗯", "is"]))
    return draw(st.sampled_from([q, f"{word}: {q}", f"{q} {word}", f"{q} {word}?"]))


_CONSONANTS = "bcdfghjklmnpqrstvwxyz"
_VOWELS = "aeiou"
syllables = st.builds(lambda c, v: c + v, st.sampled_from(_CONSONANTS), st.sampled_from(_VOWELS))


@st.composite
def repeated_syllables(draw) -> str:
    """One syllable over and over (``la la la``, ``lalala``, ``la-la-la``), or words that are
    each one letter or one syllable repeated (``aa bb cc dd``, ``lala kiki``)."""
    sep = draw(st.sampled_from([" ", "", "-", ", ", "... ", "\n", "~ "]))
    if draw(st.booleans()):
        unit = draw(st.one_of(syllables, st.sampled_from(list(_CONSONANTS + _VOWELS))))
        text = sep.join([unit] * draw(st.integers(3, 12)))
    else:
        units = draw(
            st.lists(
                st.one_of(syllables, st.sampled_from(list("abcdefghij"))), min_size=3, max_size=8
            )
        )
        text = " ".join(u * draw(st.integers(2, 4)) for u in units)
    return draw(st.sampled_from([text, text.capitalize(), text.upper()])) + draw(
        st.sampled_from(["", ".", "!", "..."])
    )


LOREM = (
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut "
    "labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco "
    "laboris nisi ut aliquip ex ea commodo consequat. Duis aute irure dolor in reprehenderit in "
    "voluptate velit esse cillum dolore eu fugiat nulla pariatur. Excepteur sint occaecat "
    "cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum."
).split()


@st.composite
def lorem_windows(draw) -> str:
    start = draw(st.integers(0, len(LOREM) - 3))
    words = LOREM[start : start + draw(st.integers(3, 40))]
    if draw(st.booleans()):
        words = draw(st.permutations(words))
    text = " ".join(words)
    return draw(st.sampled_from([text, text.lower(), text.upper(), text.capitalize()]))


@st.composite
def fillers(draw):
    """Up to three pieces of invisible letters, repeated syllables and Lorem ipsum, and the
    question pasted back at most once among them."""
    question = draw(st.sampled_from(QUESTIONS))
    pieces = st.one_of(invisible, repeated_syllables(), lorem_windows())
    parts = draw(st.lists(pieces, min_size=0, max_size=3))
    if not parts or draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), draw(pasted_questions(question)))
    return draw(st.sampled_from([" ", "\n", " ... "])).join(parts), question


@SETTINGS
@given(fillers())
def test_generated_filler_earns_no_think_term(case):
    filler, question = case
    assert total(filler, question) == pytest.approx(NONE[question]), filler


# --------------------------------------------------------------------------- real reasoning

REAL = [
    "I need to see the middle of the clip first.",
    "Look at 1-2 s first.",
    "The overview misses the square, so I sweep the video.",
    "The square is red.",
    "It is red.",
    "The square that appeared briefly is red.",
    "The windows frames show a red square.",
    "No coloured square is visible in the overview frames, so I have to guess.",
    "Check the last 30 seconds for the dog.",
    "Two people enter at 0:45 and one leaves later.",
    "The man opens the door, then sits down.",
    "Frames 3 and 4 show him pouring milk.",
    "Need a closer look at 12-18 s.",
    "She picks up the cup before the book.",
    "I saw it in the overview.",
    "Crop 0-30, 30-60 and 60-90 to find it.",
    "我要看一看中间的画面",
    "方块是红色的，出现在中间。",
    "先看视频的前十秒再决定。",
    "The dog runs because the door slams.",
    "It appears near the end, around 150 s.",
    "Nothing happens before 20 s; the event is later.",
]


@pytest.mark.parametrize("reasoning", REAL)
@pytest.mark.parametrize("question", QUESTIONS[:1] + QUESTIONS[2:3])
def test_short_real_reasoning_earns_the_think_terms(reasoning, question):
    assert total(reasoning, question) == pytest.approx(2.8), reasoning
