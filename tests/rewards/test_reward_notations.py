"""The answer reader's principles for open-ended answers and spans (docs/ANSWERS.md), each
proven on 1,000 generated cases through the reward's composition (``reward_episodes.py``: the
episode ``score_episode`` scores, and the invariant a hedge never beats committing to either
candidate in expectation).

- **Open-ended: a list of candidates is a hedge whatever joins it** — a space, a comma, ``and``,
  ``with``, a slash: two modifiers of one noun (``red blue square``) or two numbers of one unit
  (``5 7 seconds``) hold the gold's words and more, so they are no answer.
- **A unit alone is no number**: when the gold holds a number, an answer without one
  (``seconds`` for ``5 seconds``) scores no more than any wrong number.
- **Spans in other notations are read** (``3秒到7秒``, ``3초부터 7초까지``, SRT timestamps,
  milliseconds, fullwidth digits): an honest span scores IoU 1, two spans are no answer.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reward_episodes import SETTINGS, check, committed, total
from test_reward_hedges import joiners, layouts, two_spans

from paravt.rewards import accuracy, parse_span, token_f1

# --------------------------------------------------------------------------- open-ended lists

NOUNS = ["square", "circle", "dog", "cup", "ball", "box", "door", "man", "cars", "people"]
MODIFIERS = ["red", "blue", "green", "yellow", "big", "small", "wooden", "striped", "old", "open"]
UNITS = ["seconds", "s", "people", "times", "minutes", "cars", "steps", ""]
_LIST_JOINS = [" ", "  ", ", ", " and ", " / ", "\n", " & ", "; ", " or ", " with ", " plus ", "-"]


@st.composite
def listed_candidates(draw):
    """Two open-ended candidates as a list joined by anything, a space included: two modifiers
    of one noun, or two numbers of one unit (``5 7 seconds``, ``5, 7 seconds``)."""
    j = draw(st.sampled_from(_LIST_JOINS))
    if draw(st.booleans()):
        noun = draw(st.sampled_from(NOUNS))
        m1, m2 = draw(st.lists(st.sampled_from(MODIFIERS), min_size=2, max_size=2, unique=True))
        art = draw(st.sampled_from(["", "a ", "the "]))
        return f"{art}{m1}{j}{m2} {noun}", f"{m1} {noun}", f"{m2} {noun}"
    unit = draw(st.sampled_from(UNITS))
    n1, n2 = draw(st.lists(st.integers(0, 120), min_size=2, max_size=2, unique=True))
    sep = "" if j == "-" else j  # "5-7" is one number range
    return f"{n1}{sep or ' '}{n2} {unit}".strip(), f"{n1} {unit}".strip(), f"{n2} {unit}".strip()


@SETTINGS
@given(listed_candidates())
def test_an_open_ended_list_earns_no_more_than_a_wrong_candidate(case):
    hedge, x, y = case
    check(hedge, x, y, x, y, "oe")


@SETTINGS
@given(
    st.integers(0, 120),
    st.integers(0, 120),
    st.sampled_from([u for u in UNITS if u]),
    st.sampled_from(["", "the ", "about "]),
)
def test_a_unit_alone_never_beats_a_wrong_number(n_gold, n_wrong, unit, lead):
    """``seconds`` for ``5 seconds`` is no number: it scores no more than any wrong number."""
    gold = f"{n_gold} {unit}"
    alone = total(f"{lead}{unit}", gold, "oe", None)
    assert alone <= committed(f"{n_wrong} {unit}", gold, "oe", None) + 1e-9
    assert accuracy(f"{lead}{unit}", gold, "oe") == 0.0


# --------------------------------------------------------------------------- span notations


def _srt(t: float) -> str:
    ms = round(t * 1000)
    return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if c.isdigit() or c in "-." else c for c in text)


@st.composite
def notated_spans(draw, span: tuple[float, float]) -> str:
    """``span`` in one of the notations beyond ``s - e``: CJK units and joiners, SRT
    timestamps, milliseconds, fullwidth digits."""
    s, e = span
    f = lambda t: f"{t:g}"  # noqa: E731
    forms = [
        f"{f(s)}秒到{f(e)}秒",
        f"{f(s)}秒至{f(e)}秒",
        f"从{f(s)}秒到{f(e)}秒",
        f"{f(s)}秒から{f(e)}秒まで",
        f"{f(s)}초부터 {f(e)}초까지",
        f"{f(s)}~{f(e)}秒",
        f"{_srt(s)} --> {_srt(e)}",
        f"{round(s * 1000)} ms - {round(e * 1000)} ms",
        f"{round(s * 1000)}ms到{round(e * 1000)}ms",
        f"from {round(s * 1000)} to {round(e * 1000)} milliseconds",
        _fullwidth(f"{f(s)}-{f(e)}") + "秒",
        f"{f(s)}s → {f(e)}s",
    ]
    return draw(st.sampled_from(forms))


@SETTINGS
@given(two_spans().flatmap(lambda xy: st.tuples(st.just(xy[0]), notated_spans(xy[0]))))
def test_a_span_in_another_notation_is_read(case):
    span, text = case
    read = parse_span(text)
    assert read is not None and read == pytest.approx(span, abs=1e-6), text
    assert accuracy(text, list(span), "tvg") == pytest.approx(1.0), text


@st.composite
def notated_span_hedges(draw):
    x, y = draw(two_spans())
    first, second = draw(notated_spans(x)), draw(notated_spans(y))
    return draw(layouts(draw(joiners(tight=False)), first, second)), x, y


@SETTINGS
@given(notated_span_hedges())
def test_two_spans_in_other_notations_earn_no_more_than_a_wrong_span(case):
    hedge, x, y = case
    check(hedge, x, y, f"{x[0]:g} - {x[1]:g} s", f"{y[0]:g} - {y[1]:g} s", "tvg")


# --------------------------------------------------------------------------- fixed cases


@pytest.mark.parametrize(
    ("answer", "gold", "f1"),
    [
        ("red blue square", "a red square", 0.0),
        ("3 4 5", "4", 0.0),
        ("seconds", "5 seconds", 0.0),
        ("five seconds", "5 seconds", 1.0),
        ("5.0 seconds", "5 seconds", 1.0),
        ("7 seconds", "5 seconds", 0.5),
        ("el cuadrado rojo", "cuadrado rojo", 0.8),
        ("the square is red", "a red square", 0.8),
    ],
)
def test_open_ended_numbers_and_lists(answer, gold, f1):
    assert token_f1(answer, gold) == pytest.approx(f1)
