"""R_acc: MCQ letters (A–J, first-letter traps), temporal spans and IoU, open-ended F1/exact."""

from __future__ import annotations

import pytest

from paravt.errors import UserError
from paravt.rewards import (
    accuracy,
    exact_match,
    extract_mcq_letter,
    mcq_gold_letter,
    oe_hedged,
    oe_phrases,
    parse_span,
    temporal_iou,
    temporal_iou_hull,
    token_f1,
)
from paravt.schema.questions import LETTERS, UnknownQuestionTypeError

OPTIONS = ["A woman is cooking", "The dog runs away", "A man opens the door", "Nothing happens"]
TEN = [f"option text {i}" for i in range(10)]


@pytest.mark.parametrize(
    "text, letter",
    [
        ("B", "B"),
        ("(B)", "B"),
        ("B.", "B"),
        ("B)", "B"),
        ("[B]", "B"),
        ("**B**", "B"),
        ("b", "B"),
        ("Option B", "B"),
        ("option (B)", "B"),
        ("The answer is B", "B"),
        ("The answer is B.", "B"),
        ("The correct answer is: (B) the dog", "B"),
        ("Answer: B", "B"),
        ("<answer>B. The dog runs away</answer>", "B"),
        ("<think>A seems wrong.</think><answer>(B)</answer>", "B"),
        ("B. The dog runs away", "B"),
        ("(B) The dog runs away", "B"),
        ("B because the dog leaves", "B"),
        ("Option A is wrong; the answer is B", "B"),
        ("I think it is C", None),  # without options I is an option letter too: two candidates
        ("A", "A"),
        ("A.", "A"),
        ("(A)", "A"),
        ("The answer is A because the woman cooks", "A"),
        ("A is correct", "A"),
        ("a man", None),
        ("A man", None),
        ("A man opens the door", None),  # without options: an article, not a choice
        ("The answer is A man", None),
        ("I", "I"),
        ("", None),
        ("no letter here", None),
        ("<|im_end|>", None),
    ],
)
def test_mcq_letter_without_options(text, letter):
    assert extract_mcq_letter(text) == letter


def test_the_pronoun_i_with_four_options():
    """With four options I is no letter, so "I think" is the pronoun in every case."""
    assert extract_mcq_letter("I think it is C", OPTIONS) == "C"
    assert extract_mcq_letter("I", OPTIONS) is None


@pytest.mark.parametrize("letter", list("EFGHIJ"))
def test_letters_e_to_j(letter):
    assert extract_mcq_letter(letter, TEN) == letter
    assert extract_mcq_letter(f"({letter})", TEN) == letter
    assert extract_mcq_letter(f"The answer is {letter}.", TEN) == letter
    assert extract_mcq_letter(f"<answer>{letter}. option text</answer>", TEN) == letter
    assert accuracy(f"Option {letter}", letter, "mcq", TEN) == 1.0
    assert accuracy(f"Option {letter}", "A", "mcq", TEN) == 0.0


def test_letter_must_exist_among_options():
    four = OPTIONS
    assert extract_mcq_letter("E", four) is None
    assert extract_mcq_letter("E", LETTERS) == "E"
    assert accuracy("E", "E", "mcq", four) == 0.0
    assert extract_mcq_letter("K") is None


@pytest.mark.parametrize(
    "text, letter",
    [
        ("A man opens the door", "C"),  # the trap: option C's text, not letter A
        ("a man opens the door.", "C"),
        ("The dog runs away", "B"),
        ("I believe the dog runs away in this clip", "B"),
        ("A woman is cooking", "A"),
        ("Nothing happens", "D"),
        ("A", "A"),
        ("a man", None),
    ],
)
def test_mcq_option_text(text, letter):
    assert extract_mcq_letter(text, OPTIONS) == letter


def test_a_alone_scores_and_a_man_does_not():
    assert accuracy("A", "A", "mcq", OPTIONS) == 1.0
    assert accuracy("<answer>A</answer>", "A", "mcq", OPTIONS) == 1.0
    assert accuracy("a man", "A", "mcq", OPTIONS) == 0.0
    assert accuracy("A man is there", "A", "mcq") == 0.0
    assert accuracy("A man opens the door", "A", "mcq", OPTIONS) == 0.0
    assert accuracy("A man opens the door", "C", "mcq", OPTIONS) == 1.0


def test_labelled_options_and_gold_forms():
    labelled = ["A. red", "B. green", "C. blue"]
    assert extract_mcq_letter("green", labelled) == "B"
    assert mcq_gold_letter("B", labelled) == "B"
    assert mcq_gold_letter("(C)", labelled) == "C"
    assert mcq_gold_letter(1, labelled) == "B"
    assert mcq_gold_letter("blue", labelled) == "C"  # MLVU gives the option text
    assert mcq_gold_letter(None) is None and mcq_gold_letter(True) is None
    assert accuracy("C", "blue", "mcq", labelled) == 1.0


@pytest.mark.parametrize(
    "text, span",
    [
        ("12.0 - 20.5", (12.0, 20.5)),
        ("[12, 20.5]", (12.0, 20.5)),
        ("12.0-20.5", (12.0, 20.5)),
        ("12 to 20.5", (12.0, 20.5)),
        ("(12, 20.5)", (12.0, 20.5)),
        ("between 12 and 20.5 seconds", (12.0, 20.5)),
        ("12.5s - 20s", (12.5, 20.0)),
        ("12.5 seconds to 20 seconds", (12.5, 20.0)),
        ("from 1 to 2 minutes", (60.0, 120.0)),
        ("1:05 - 1:30", (65.0, 90.0)),
        ("0:12.5 to 0:20", (12.5, 20.0)),
        ("1:02:03 to 1:02:10", (3723.0, 3730.0)),
        ("20.5 - 12", (12.0, 20.5)),  # reversed pair swapped
        ("<answer>The event happens from 12.0 to 20.5 seconds.</answer>", (12.0, 20.5)),
        ("At 1, 12 to 20", (12.0, 20.0)),
        ('{"start": 3, "end": 9}', (3.0, 9.0)),
        ("12", None),
        ("no time here", None),
        ("", None),
        ("1" * 400 + " - 5", None),  # overflows to inf → unparseable
    ],
)
def test_parse_span(text, span):
    assert parse_span(text) == span


def test_dash_and_bracket_forms_score_the_same():
    gold = [12.0, 20.5]
    assert accuracy("12.0 - 20.5", gold, "tvg") == 1.0
    assert accuracy("[12, 20.5]", gold, "tvg") == 1.0
    assert accuracy("12.0 - 20.5", gold, "tvg") == accuracy("[12, 20.5]", gold, "tvg")
    assert accuracy("[12, 20.5]", "12 - 20.5", "tvg") == 1.0  # gold as text
    assert accuracy("no idea", gold, "tvg") == 0.0


@pytest.mark.parametrize(
    "pred, gold, iou",
    [
        ((0, 10), (0, 10), 1.0),
        ((0, 10), (5, 15), 5 / 15),
        ((5, 15), (0, 10), 5 / 15),
        ((0, 10), (2, 4), 0.2),
        ((0, 10), (10, 20), 0.0),
        ((0, 10), (30, 40), 0.0),
        ((10, 0), (0, 10), 1.0),
        ((3, 3), (3, 3), 1.0),
        ((3, 3), (0, 10), 0.0),
        ((float("nan"), 1), (0, 1), 0.0),
        (("x", 1), (0, 1), 0.0),
    ],
)
def test_iou_and_hull_iou(pred, gold, iou):
    assert temporal_iou(pred, gold) == pytest.approx(iou)
    assert temporal_iou_hull(pred, gold) == pytest.approx(iou)


def test_tvg_accuracy_is_iou():
    assert accuracy("5 - 15", (0, 10), "tvg") == pytest.approx(1 / 3)


@pytest.mark.parametrize(
    "pred, gold, f1, exact",
    [
        ("a red car", "the red car", 1.0, 1.0),
        ("The Red car.", "red car", 1.0, 1.0),
        ("red car", "red car parked outside", 2 * (1.0 * 0.5) / 1.5, 0.0),
        ("dog dog dog", "dog", 2 * (1 / 3) / (1 / 3 + 1), 0.0),  # multiset, not set
        ("blue", "red", 0.0, 0.0),
        ("", "red", 0.0, 0.0),
        ("red", "", 0.0, 0.0),
        ("<answer>two people</answer>", ["three people", "two people"], 1.0, 1.0),
    ],
)
def test_open_ended(pred, gold, f1, exact):
    assert token_f1(pred, gold) == pytest.approx(f1)
    assert exact_match(pred, gold) == exact
    assert accuracy(pred, gold, "oe") == pytest.approx(f1)
    assert accuracy(pred, gold, "oe", oe_metric="exact") == exact


def test_unknown_question_type_is_a_user_error():
    with pytest.raises(UnknownQuestionTypeError, match="question_type='yesno'") as info:
        accuracy("B", "B", "yesno")
    assert isinstance(info.value, UserError)
    with pytest.raises(UnknownQuestionTypeError, match="oe_metric"):
        accuracy("x", "x", "oe", oe_metric="bleu")


# -- reading an untagged answer: one rule in rewards, engine and eval ---------


@pytest.mark.parametrize(
    "text, letter",
    [
        ("D. 1633\n\nThe video shows a clock that reads 16:33.", "D"),
        ("D\nBecause the clock reads 16:33.", "D"),
        ("<think>The clock reads 16:33.</think>\nD. 1633\n\nThe video shows a clock.", "D"),
        ("<think>r</think>\n(B) the dog\n\nIt runs off at the end.", "B"),
        # the first-letter trap still holds over several lines
        ("A man opens the door.\nHe leaves.", None),
        ("<think>r</think>\nA man opens the door.\n\nThen he leaves.", None),
    ],
)
def test_untagged_answer_with_an_explanation(text, letter):
    assert extract_mcq_letter(text) == letter


def test_untagged_span_over_two_lines():
    assert parse_span("Start time: 6.60s\nEnd time: 15.21s") == (6.6, 15.21)
    assert parse_span("<think>r</think>\nStart time: 6.60s\nEnd time: 15.21s") == (6.6, 15.21)


def test_answer_text_is_the_parser_rule():
    from paravt.eval.scoring import answer_text_of
    from paravt.grammar import extract_answer
    from paravt.rewards import answer_text

    for text in [
        "D. 1633\n\nThe video shows …",
        "D\nBecause …",
        "Start time: 6.60s\nEnd time: 15.21s",
        "<think>r</think>\nB\nbecause…<|im_end|>",
        '<think>r</think><tool_call>{"name": "crop_video"}</tool_call>\nC',
    ]:
        assert answer_text(text) == extract_answer(text) == answer_text_of(text, None)
        assert answer_text(text)


# -- phrases and letter case -------------------------------------------------


@pytest.mark.parametrize(
    "text, letter",
    [
        ("选项A不对，答案是D。", "D"),
        ("答案是D", "D"),
        ("答案为：C", "C"),
        ("答案是（b）", "B"),
        ("我选B。", "B"),
        ("选择C，因为狗跑了", "C"),
        ("the answer is b", "B"),
        ("The answer is (c).", "C"),
        ("answer: d", "D"),
        ("option e", "E"),
        ("(b) the dog", "B"),
        ("b. the dog", "B"),
        # lower-case letters read as words stay words in every form
        ("the answer is a dog", None),
        ("answer: a man opens the door", None),
        ("I think the answer i cannot tell", None),
    ],
)
def test_answer_phrases_and_letter_case(text, letter):
    assert extract_mcq_letter(text) == letter


def test_eval_scoring_reads_an_untagged_answer_with_an_explanation():
    from paravt.eval.scoring import score_sample

    mcq = {"question_type": "mcq", "options": ["1544", "1600", "1620", "1633"], "answer": "D"}
    assert score_sample(mcq, "D. 1633\n\nThe video shows a clock.", None, None)["correct"] == 1.0
    tvg = {"question_type": "tvg", "answer": [6.6, 15.21]}
    scored = score_sample(tvg, "Start time: 6.60s\nEnd time: 15.21s", None, None)
    assert scored["iou"] == pytest.approx(1.0)


# -- two answers are no answer (docs/ANSWERS.md, "One candidate") ---------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "B or C",
        "A B C D",
        "(B) or (C)",
        "B/C",
        "B, C",
        "A and B",
        "The answer is B or C",
        "answer: b or c",
        "<answer>B or C</answer>",
        "Option B or option C",
    ],
)
def test_two_different_letters_are_no_answer(text):
    assert extract_mcq_letter(text) is None
    assert extract_mcq_letter(text, OPTIONS) is None
    assert accuracy(text, "B", "mcq", OPTIONS) == 0.0


@pytest.mark.parametrize(
    "text, letter",
    [
        ("The answer is C, not B", "C"),  # a rejected letter is no alternative
        ("B and I think that is right", "B"),  # "I think" is a pronoun
        ("B and a dog runs", "B"),  # "a dog" is an article
        ("B or b", "B"),  # the same letter twice
        ("B because the dog leaves", "B"),
    ],
)
def test_one_letter_with_other_words_still_reads(text, letter):
    assert extract_mcq_letter(text, OPTIONS) == letter


# -- which span is the answer -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, span",
    [
        ("Video 3 shows it 12 times", None),  # two bare numbers are no span
        ("<answer>Video 3 shows it 12 times</answer>", None),
        ("There are 2 people and 5 cars", None),
        ("The event starts at 6.6 and ends at 15.2", (6.6, 15.2)),  # labelled times
        # two spans, whichever marks one: quoted, after an answer phrase, opening the text
        ('The question asks about "0 - 30 s"; the answer is 12.5 - 18', None),
        ('You asked about "0 - 30 s". It happens at 12.5 - 18', None),
        ("In the 0-30 s window, the answer is 12.5 - 18", None),
        ("12.5 - 18. The window 0 - 30 was cropped first.", None),
        ("12.5 - 18; 0 - 30 is wrong", (12.5, 18.0)),  # the other one rejected
        ("12.5 - 18, not 0 - 30", (12.5, 18.0)),
        ("12.5-18 s (0:12.5-0:18)", (12.5, 18.0)),  # one span, written twice
        ("I looked at 0-30, then at 12-18", None),  # two spans, neither marked: no answer
        ("12-18 or 20-25", None),  # alternatives
        ("The answer is 12-18 or 20-25", None),
        ("[1.2,3]", (1.2, 3.0)),  # the decimal point stays: not (12, 3)
        ("[12,3]", (3.0, 12.0)),
    ],
)
def test_the_span_that_is_the_answer(text, span):
    assert parse_span(text) == span


def test_bracketed_decimals_score_against_their_own_gold():
    """Reference defect: ``[1.2,3]`` read as ``[12,3]``; here each is its own span."""
    assert accuracy("[1.2,3]", [1.2, 3.0], "tvg") == 1.0
    assert accuracy("[1.2,3]", [3.0, 12.0], "tvg") == 0.0
    assert accuracy("[12,3]", [3.0, 12.0], "tvg") == 1.0
    assert accuracy("[12,3]", [1.2, 3.0], "tvg") == 0.0


def test_a_lone_period_is_no_answer_to_gold_a():
    """Reference defect: the reference's last rule reads the first character, so ``.`` was
    compared with the gold; here a reply without a letter scores 0 whatever the gold."""
    for text in (".", "<answer>.</answer>", " . ", "..."):
        assert extract_mcq_letter(text) is None
        assert accuracy(text, "A", "mcq", OPTIONS) == 0.0
        assert accuracy(text, 0, "mcq", OPTIONS) == 0.0


def test_a_span_right_after_chinese_text():
    assert parse_span("答案是3-9") == (3.0, 9.0)
    assert parse_span("答案是3-9秒") == (3.0, 9.0)
    assert parse_span("我看了0-30，答案是3-9") is None  # two spans
    assert parse_span("答案是3-9，不是0-30") == (3.0, 9.0)  # the other one rejected


def test_an_open_ended_hedge_is_no_answer_for_the_reward_and_the_judge():
    from paravt.eval.judge import rule_match
    from paravt.rewards import exact_match, oe_hedged

    for hedge in ("red or blue", "red/blue", "either red or blue", "red, maybe blue", "红色或蓝色"):
        assert oe_hedged(hedge, "red"), hedge
        assert token_f1(hedge, "red") == 0.0 and not rule_match(hedge, "red")
    assert exact_match("red or blue", "red or blue") == 1.0  # the gold offers them too
    assert token_f1("to be or not", "to be or not to be") > 0.5
    # one uncertain candidate and a fraction are one phrase
    assert token_f1("maybe red", "red") == 1.0
    assert not oe_hedged("1/2", "0.5") and rule_match("the red square", "red")
    # a list names two phrases: no answer for the reward; the judge credits the containment
    assert token_f1("red and blue", "red") == 0.0 and rule_match("red and blue", "red")


@pytest.mark.parametrize(
    "answer, phrases",
    [
        ("a red square", [["red", "square"]]),
        ("The answer is a red square.", [["red", "square"]]),
        ("Answer: red square", [["red", "square"]]),
        ("red | blue square", [["red"], ["blue", "square"]]),
        ("red & blue square", [["red"], ["blue", "square"]]),
        ("red square (blue square)", [["red", "square"], ["blue", "square"]]),
        ("red square; blue square", [["red", "square"], ["blue", "square"]]),
        ("red square, not blue square", [["red", "square"]]),  # the other one rejected
        ("red-blue square", [["red"], ["blue", "square"]]),  # a hyphen joins, as any symbol
        ("1/2 of 3.5", [["1/2", "of", "3.5"]]),  # so does a number
        ("红色或蓝色", [["红", "色"], ["蓝", "色"]]),
    ],
)
def test_open_ended_phrases(answer, phrases):
    assert oe_phrases(answer) == phrases
    assert oe_hedged(answer, "a red square") == (len(phrases) > 1)


def test_the_tool_bonus_needs_exactly_the_gold_content_words():
    """A generic noun alone reaches F1 0.67 against "a red square" but not the bonus; the gold's
    words do. Two candidates side by side (``red blue square``) and an added detail hold the
    gold's content words and more: no answer at all now (they paid F1 0.8 and 0.67 before: a
    list of candidates is a hedge whatever joins it, docs/ANSWERS.md). Multiple choice and
    grounding keep the threshold alone."""
    from paravt.rewards import RewardConfig, bonus_earned

    cfg = RewardConfig()
    for answer, f1, bonus in [
        ("square", 2 / 3, False),
        ("red", 2 / 3, False),
        ("blue square", 0.5, False),
        ("a red square", 1.0, True),
        ("The red square.", 1.0, True),
        ("red blue square", 0.0, False),
        ("the red square in the corner", 0.0, False),
    ]:
        acc = token_f1(answer, "a red square")
        assert acc == pytest.approx(f1), answer
        assert bonus_earned(answer, "a red square", "oe", None, acc, cfg) is bonus, answer
    assert bonus_earned("B", "B", "mcq", None, 1.0, cfg)
    assert bonus_earned("3-9", [3, 9.5], "tvg", None, 0.5, cfg)
    assert not bonus_earned("3-9", [3, 20], "tvg", None, 0.35, cfg)


def test_a_letter_hyphened_to_an_option_label_names_two_candidates():
    """Found by the generated hedges: 'A-Option B' read as B (the letter glued to a word was taken
    for part of it, as in 'A-frame'); an option's label after the hyphen makes it two."""
    from paravt.rewards.answers import extract_mcq_letter

    options = ["A pancake", "A steak", "Soup", "Rice"]
    assert extract_mcq_letter("A-Option B", options) is None
    assert extract_mcq_letter("A-option: B", options) is None
    assert extract_mcq_letter("The A-frame is in option B", options) == "B"


def test_a_letter_hyphened_to_an_option_text_names_that_letter_too():
    """Found by the generated hedges on 6 Dec (a run under ``-n 3``): 'A-He opens a door' read as
    B, the option whose text follows the hyphen, and earned a right answer's 2.8 with gold B; the
    letter glued to the option's text was taken for part of a hyphenated word. It names A and B:
    no answer. The same letter and its own text stay one candidate."""
    from paravt.rewards.answers import extract_mcq_letter

    options = ["He flips a pancake", "He opens a door", "He pours milk", "He sits down"]
    assert extract_mcq_letter("A-He opens a door", options) is None
    assert extract_mcq_letter("C–He opens a door", options) is None  # an en dash too
    assert extract_mcq_letter("B-He opens a door", options) == "B"
    assert extract_mcq_letter("A-He flips a pancake", options) == "A"
    assert extract_mcq_letter("The A-frame shows he opens a door", options) == "B"
