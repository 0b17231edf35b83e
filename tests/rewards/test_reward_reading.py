"""The answer reader's principles (docs/ANSWERS.md), each proven on 1,000 generated cases through
the reward's composition (``reward_episodes.py``: the episode ``score_episode`` scores, and the
invariant a hedge never beats committing to either candidate in expectation).

- **Normalise before reading**: a letter written in a look-alike form (fullwidth, mathematical,
  circled, Roman numeral, small capital, a Cyrillic/Greek/Cherokee letter that looks like it) is
  that letter; a hedge written with look-alikes is a hedge.
- **A rejected letter is not chosen**: negation before it (with the words its scope crosses) or
  a rejecting predicate after it, in several languages, or a strike-through.
- **A withdrawal after the answer makes it no answer.**

Open-ended lists, numbers and span notations: ``test_reward_notations.py``. Each generator
builds the candidates from parts, never from a list of whole strings, and the honest forms of
each principle are checked beside the exploit (an honest look-alike letter reads as the letter;
an explanation after the answer keeps it).
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st
from reward_episodes import SETTINGS, check, committed, total
from test_reward_hedges import OPTION_SETS, joiners, layouts

from paravt.rewards import extract_mcq_letter
from paravt.rewards.normalise import LOOKALIKES
from paravt.schema.questions import LETTERS

# --------------------------------------------------------------------------- look-alike letters


def _named(name: str) -> str | None:
    try:
        return unicodedata.lookup(name)
    except KeyError:
        return None


def _disguises(letter: str) -> list[str]:
    """Every form of ``letter`` (a capital A–J) the reader must read as it: compatibility forms
    (NFKC) and the look-alike letters of other scripts."""
    forms = [
        chr(0xFF21 + ord(letter) - ord("A")),  # fullwidth
        chr(0xFF41 + ord(letter) - ord("A")),  # fullwidth small
        _named(f"CIRCLED LATIN CAPITAL LETTER {letter}"),
        *(
            _named(f"MATHEMATICAL {style} CAPITAL {letter}")
            for style in ("BOLD", "ITALIC", "BOLD ITALIC", "SANS-SERIF", "SANS-SERIF BOLD")
        ),
        _named(f"MATHEMATICAL DOUBLE-STRUCK CAPITAL {letter}")
        or _named(f"DOUBLE-STRUCK CAPITAL {letter}"),
        {"C": "Ⅽ", "D": "Ⅾ", "I": "Ⅰ"}.get(letter),
        *(c for c, latin in LOOKALIKES.items() if latin == letter),
    ]
    return [f for f in forms if f]


@st.composite
def disguised(draw, letter: str) -> str:
    """``letter`` in one of its look-alike forms, in one of the letter layouts."""
    form = draw(st.sampled_from(_disguises(letter)))
    return draw(st.sampled_from([form, f"({form})", f"{form}.", f"Option {form}", f"答案是{form}"]))


@st.composite
def lookalike_hedges(draw):
    options = draw(st.sampled_from(OPTION_SETS))
    x, y = draw(st.lists(st.integers(0, min(len(options), 10) - 1), min_size=2, max_size=2,
                         unique=True))  # fmt: skip
    first = draw(st.one_of(disguised(LETTERS[x]), st.just(LETTERS[x])))
    second = draw(disguised(LETTERS[y]))
    if draw(st.booleans()):
        first, second = second, first
    return draw(layouts(draw(joiners()), first, second)), options, x, y


@SETTINGS
@given(lookalike_hedges())
def test_a_hedge_written_with_lookalike_letters_earns_no_more_than_a_wrong_letter(case):
    hedge, options, x, y = case
    check(hedge, LETTERS[x], LETTERS[y], LETTERS[x], LETTERS[y], "mcq", options)


@SETTINGS
@given(st.integers(0, 9).flatmap(lambda i: st.tuples(st.just(i), disguised(LETTERS[i]))))
def test_an_honest_lookalike_letter_reads_as_the_letter(case):
    i, answer = case
    options = OPTION_SETS[4]  # ten options: A-J
    assert extract_mcq_letter(answer, options) == LETTERS[i], answer
    assert total(answer, LETTERS[i], "mcq", options) == pytest.approx(2.8), answer


# --------------------------------------------------------------------------- rejection

# Negators and the few words their scope may cross, in several languages (docs/ANSWERS.md,
# "Rejection"): built into phrases, never listed whole.
_NEGATORS = ["not", "never", "It can't be", "It cannot be", "I don't think it's", "Definitely not",
             "It isn't", "nicht", "kein", "pas", "non", "no es", "не", "不是", "除了", "não"]  # fmt: skip
_WRONG_AFTER = ["is wrong", "is the wrong answer", "would be incorrect", "is definitely wrong",
                "can't be it", "is not the answer", "is ruled out", "ist falsch", "est faux",
                "es incorrecta", "è sbagliata", "неверно", "不对", "is a distractor"]  # fmt: skip
_CHOOSE = ["{c}", "The answer is {c}", "So {c}", "{c} is it", "答案是{c}", "Antwort: {c}"]


@st.composite
def rejections(draw):
    """An answer that commits to one option (or to none) and rejects one or two others: by a
    negator before them, a rejecting predicate after them, or a strike-through; in any order."""
    options = draw(st.sampled_from(OPTION_SETS[:4]))
    picks = draw(st.lists(st.integers(0, len(options) - 1), min_size=2, max_size=3, unique=True))
    chosen, rejected = (picks[0], picks[1:]) if draw(st.booleans()) else (None, picks[1:])
    pieces = []
    for r in rejected:
        letter = LETTERS[r]
        kind = draw(st.integers(0, 2))
        if kind == 0:
            pieces.append(f"{draw(st.sampled_from(_NEGATORS))} {letter}")
        elif kind == 1:
            pieces.append(f"{letter} {draw(st.sampled_from(_WRONG_AFTER))}")
        else:
            pieces.append(draw(st.sampled_from([f"~~{letter}~~", f"<s>{letter}</s>",
                                                f"<del>{letter}</del>", letter + "\u0336"])))  # fmt: skip
    if chosen is not None:
        pieces.append(draw(st.sampled_from(_CHOOSE)).format(c=LETTERS[chosen]))
    order = draw(st.permutations(pieces))
    sep = draw(st.sampled_from([". ", "; ", ".\n", "。"]))
    return sep.join(order) + ".", options, chosen


@SETTINGS
@given(rejections())
def test_a_rejected_letter_is_not_chosen(case):
    text, options, chosen = case
    assert extract_mcq_letter(text, list(options)) == (
        LETTERS[chosen] if chosen is not None else None
    ), text
    gold = LETTERS[chosen] if chosen is not None else "A"
    expected = 2.8 if chosen is not None else committed("nothing", gold, "mcq", options)
    assert total(text, gold, "mcq", options) == pytest.approx(expected), text


# --------------------------------------------------------------------------- after the answer

_WITHDRAWALS = ["Wait", "Actually", "Sorry, I meant", "No", "No wait", "Hmm, wait", "Oops, actually",
                "On second thought", "Scratch that", "Correction", "Let me reconsider", "Warte",
                "Eigentlich", "En fait", "Espera", "Подожди", "На самом деле", "等等", "其实",
                "Never mind", "I take that back", "I was wrong"]  # fmt: skip


@st.composite
def withdrawn_answers(draw):
    """A committed answer in tags, then a sentence after the closed tag that withdraws it (and
    may name the other candidate): for options, spans and phrases."""
    qtype = draw(st.sampled_from(["mcq", "tvg", "oe"]))
    if qtype == "mcq":
        options = draw(st.sampled_from(OPTION_SETS[:3]))
        x, y = LETTERS[0], LETTERS[draw(st.integers(1, len(options) - 1))]
        cx, cy = x, y
    elif qtype == "tvg":
        options, x, y = None, (3.0, 7.0), (20.0, 25.0)
        cx, cy = "3 - 7 s", "20 - 25 s"
    else:
        options, x, y = None, "red square", "blue square"
        cx, cy = x, y
    word = draw(st.sampled_from(_WITHDRAWALS))
    rest = draw(st.sampled_from(["", f" {cy}", f", it is {cy}", f", {cy}.", "..."]))
    tail = draw(st.sampled_from([" ", "\n", "\n\n"])) + word + rest
    return cx, tail, x, y, cx, cy, qtype, options


@SETTINGS
@given(withdrawn_answers())
def test_an_answer_withdrawn_after_its_tag_earns_no_more_than_a_wrong_answer(case):
    answer, tail, x, y, cx, cy, qtype, options = case
    check(answer, x, y, cx, cy, qtype, options, tail=tail)
    assert total(answer, x, qtype, options, tail) < committed(cx, x, qtype, options)


def test_an_explanation_after_the_answer_keeps_it():
    """An explanation after the tag that names the same candidate (or none) withdraws nothing."""
    options = OPTION_SETS[0]
    assert total("B", "B", "mcq", options, " He opens a door (B).") == pytest.approx(2.8)
    assert total("3 - 7 s", (3.0, 7.0), "tvg", None, "\nThe door opens then.") == pytest.approx(2.8)
    assert total("red square", "red square", "oe", None, "\nIt is in the corner.") == (
        pytest.approx(2.8)
    )
    # a second candidate after the answer is one more: no answer
    assert total("B", "B", "mcq", options, " C.") == committed("nothing", "B", "mcq", options)


# --------------------------------------------------------------------------- fixed cases


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("Β", "B"),  # Greek capital beta
        ("Ｂ", "B"),
        ("𝐁", "B"),
        ("Ⅽ", "C"),
        ("Ответ: С", "C"),  # a Cyrillic С after a Russian word
        ("Ответ: B, с уверенностью", "B"),  # the Russian preposition с, not a letter
        ("B, nicht C", "B"),
        ("B, pas C", "B"),
        ("C, не B", "C"),
        ("It can't be B. D.", "D"),
        ("B is the wrong answer; the answer is C.", "C"),
        ("Not A, B.", "B"),
        ("Neither A nor B: it is C.", "C"),
        ("~~B~~ C", "C"),
        ("B\u0336 D", "D"),
    ],
)
def test_a_written_form_reads_as_its_letter(text, letter):
    assert extract_mcq_letter(text, OPTION_SETS[0]) == letter


@pytest.mark.parametrize(
    "text", ["B or С", "B или с", "Ｂ | Ｃ", "It can't be B", "~~B~~", "B, с C", "not A or B"]
)
def test_a_form_that_names_two_or_none_is_no_answer(text):
    assert extract_mcq_letter(text, OPTION_SETS[0]) is None


def test_a_double_negative_rejects_nothing():
    assert extract_mcq_letter("B. C is not wrong either.", OPTION_SETS[0]) is None
