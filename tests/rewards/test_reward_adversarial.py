"""Completions built to earn reward without doing the work, run through the real engine (a
scripted backend over a real video, real tool execution) and scored by the trainer's own
``score_episode`` with the paper's constants (gold B, λ_anchor 0.5, pre-fill ``<think>\\n``).

Each row is one exploit an audit found; the assertions are the rules that close it
(docs/train/REWARDS.md): a call that cannot run earns at most the parse credit and never
the correctness bonus; a think-less call under the pre-fill earns no think term; "B or C" is no
answer; "Video 3 shows it 12 times" is no span. The 3 and 4 Dec 2026 audits added hedges in
every form (no answer: the one-candidate rule, docs/ANSWERS.md), filler reasoning (no think term),
honest answers that reject the other options (scored as their letter), a generic noun (no tool
bonus), and the unclosed think that the protocol's clip absorbs after a call (kept: the reference
composes R_fmt that way). Each of those rows is scored twice from one engine run: by today's rule,
and by a frozen copy of the rule before the one-candidate rule (``frozen_rule_9f331e2.py``), so "before" is
computed, never a constant. The generated versions are ``test_reward_hedges.py`` and
``test_reward_filler.py``.
"""

from __future__ import annotations

import pytest
from frozen_rule_9f331e2 import old_rule

from paravt.agent.config import CropSettings, EngineConfig
from paravt.agent.engine import EpisodeEngine
from paravt.backends.scripted import ScriptedBackend
from paravt.rewards import RewardConfig
from paravt.schema.episodes import EpisodeInput
from paravt.train.trainer import ParaGRPOTrainer

OPTIONS = ["He flips a pancake", "He opens a door", "He pours milk", "He sits down"]
PREFILL = "<think>\n"
THINK = "I need to see the middle of the clip first.</think>\n"
ANSWER = "The window shows the answer clearly.</think>\n<answer>B</answer>"


def crop(arguments: str) -> str:
    return '<tool_call>{"name": "crop_video", "arguments": ' + arguments + "}</tool_call>"


GOOD = crop('{"video_path": "video", "start_time": 2, "end_time": 5}')
EMPTY_ARGS = crop("{}")
PAST_END = crop('{"video_path": "video", "start_time": 50, "end_time": 60}')  # video is 10.4 s
REVERSED = crop('{"video_path": "video", "start_time": "late", "end_time": 1}')


@pytest.fixture(scope="module")
def processor(tiny_qwen3_dir):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(str(tiny_qwen3_dir))


@pytest.fixture(scope="module")
def pancake(video_path):
    return str(video_path("decord__flipping_a_pancake.mkv"))


def run_and_score(processor, video, turns, question_type="mcq", gold="B", options=OPTIONS):
    """One episode through the engine with the trainer's pre-fill, scored as the trainer does."""
    cfg = EngineConfig(
        frames=4,
        min_pixels=784,
        max_pixels=4096,
        max_new_tokens=512,
        max_turns=2,
        think_prefix=PREFILL,
        crop=CropSettings(min_pixels=784, max_pixels=4096, max_frames=4),
    )
    backend = ScriptedBackend(list(turns), processor=processor)
    episode = EpisodeInput(
        "adv", video, "What does the man do?", options, question_type, answer=gold
    )
    [rec] = EpisodeEngine(backend, cfg).run([episode])
    assert rec.status == "ok", rec.error
    breakdown = ParaGRPOTrainer.score_episode(None, rec, RewardConfig())
    assert breakdown is not None
    return rec, breakdown


# (id, scripted turns, each the text generated after the pre-fill)
CANNOT_RUN = [
    ("empty arguments", [THINK + EMPTY_ARGS, ANSWER]),
    ("start past the video's end", [THINK + PAST_END, ANSWER]),
    ("a start that is no number", [THINK + REVERSED, ANSWER]),
    ("three broken calls", [THINK + EMPTY_ARGS + PAST_END + REVERSED, ANSWER]),
    ("think-less broken call", [EMPTY_ARGS, ANSWER]),
]


@pytest.mark.parametrize("turns", [r[1] for r in CANNOT_RUN], ids=[r[0] for r in CANNOT_RUN])
def test_a_call_that_cannot_run_earns_at_most_the_parse_credit(processor, pancake, turns):
    cfg = RewardConfig()
    rec, b = run_and_score(processor, pancake, turns)
    assert rec.tool_counts.executed_ok == 0 and rec.tool_counts.errors >= 1
    assert b.acc == 1.0  # the answer is right ...
    assert b.tool <= cfg.tool_parseable  # ... but a call that never ran earns no bonus
    _, direct = run_and_score(processor, pancake, [ANSWER])
    assert direct.tool == 0.0
    assert b.total <= direct.total + cfg.tool_parseable  # never more than the parse credit


def test_an_executed_call_earns_the_executed_level_and_the_bonus(processor, pancake):
    rec, b = run_and_score(processor, pancake, [THINK + GOOD, ANSWER])
    assert rec.tool_counts.executed_ok == 1
    assert b.acc == 1.0 and b.tool == pytest.approx(0.3 + 0.5)
    # the same call next to a broken one still executes and still earns the bonus
    rec, b = run_and_score(processor, pancake, [THINK + EMPTY_ARGS + GOOD, ANSWER])
    assert rec.tool_counts.executed_ok == 1 and rec.tool_counts.errors == 1
    assert b.tool == pytest.approx(0.8)


@pytest.mark.parametrize(
    "first_turn",
    [GOOD, "</think>\n" + GOOD, "ok</think>\n" + GOOD],
    ids=["call right after the pre-fill", "empty think closed, then call", "short think"],
)
def test_a_thinkless_call_under_the_prefill_earns_no_think_term(processor, pancake, first_turn):
    # the final turn answers without reasoning either, so no think term can come from it
    rec, b = run_and_score(processor, pancake, [first_turn, "</think>\n<answer>B</answer>"])
    assert rec.tool_counts.executed_ok == 1
    # base: answer 0.3 + close 0.2 (+ balanced 0.1 when every turn closed its think); no think,
    # no think-before-call, no anchor close or flow
    balanced = 0.0 if first_turn == GOOD else 0.1
    assert b.fmt_base == pytest.approx(0.5 + balanced)
    assert b.anchor == pytest.approx(-0.3 if first_turn == GOOD else 0.0)
    # the same episode with reasoning earns the think terms
    _, thought = run_and_score(processor, pancake, [THINK + GOOD, ANSWER])
    assert thought.fmt_base == pytest.approx(0.2 + 0.3 + 0.2 + 0.3 + 0.1)
    assert thought.anchor == pytest.approx(0.4 + 0.3)


def test_a_hedged_letter_scores_zero(processor, pancake):
    _, b = run_and_score(processor, pancake, [THINK + GOOD, ANSWER.replace(">B<", ">B or C<")])
    assert b.acc == 0.0 and b.tool == pytest.approx(0.3)  # executed, but no bonus
    _, b = run_and_score(processor, pancake, [THINK + GOOD, ANSWER.replace(">B<", ">A B C D<")])
    assert b.acc == 0.0


def test_two_unrelated_numbers_are_no_span(processor, pancake):
    turns = [THINK + GOOD, ANSWER.replace(">B<", ">Video 3 shows it 12 times<")]
    rec, b = run_and_score(processor, pancake, turns, "tvg", gold=[3.0, 12.0], options=None)
    assert rec.prediction == "Video 3 shows it 12 times"
    assert b.acc == 0.0 and b.tool == pytest.approx(0.3)
    turns = [THINK + GOOD, ANSWER.replace(">B<", ">The answer is 3 - 12 s<")]
    _, b = run_and_score(processor, pancake, turns, "tvg", gold=[3.0, 12.0], options=None)
    assert b.acc == 1.0 and b.tool == pytest.approx(0.8)


# ------------------------------------------------------------- the audits' holes, before and after
#
# Each completion an audit found (3 and 4 Dec 2026) beside the honest completion it must not beat:
# for a hedge, the same episode committing to the wrong candidate (same reasoning, same executed
# call); for filler reasoning, the same episode with no reasoning; for an honest answer the old
# rule refused, the same episode answering with the bare letter. "Now" is the total through this
# engine and ``score_episode``; "before" is the same record scored with the frozen copy of the
# rule as it stood before the one-candidate rule swapped in (``frozen_rule_9f331e2.old_rule``), so a row whose
# hole had never been open shows it instead of passing on a constant.

WHOLE = crop('{"video_path": "video", "start_time": 0, "end_time": 10.4}')  # the whole video


def answering(answer: str) -> list[str]:
    """A tool episode with honest reasoning, one executed call, and this final answer."""
    return [THINK + GOOD, f"The window shows it clearly.</think>\n<answer>{answer}</answer>"]


def now_and_before(processor, video, turns, qtype="mcq", gold="B", options=OPTIONS):
    """The episode's total under today's rule and under the frozen one, from one engine run."""
    rec, now = run_and_score(processor, video, turns, qtype, gold, options)
    with old_rule():
        before = ParaGRPOTrainer.score_episode(None, rec, RewardConfig())
    return now, before


SQUARE = "a red square"
MCQ_HEDGES = [
    "B | C", "B - C", "B – or C", "B ∨ C", "B >> C", "B unless C", "B 还是 C",
    "B. C might also be right.", "Answer: B\nAnswer: C", "The answer is B. The answer is C.",
    "B. He pours milk.", "B (or C)", "B or maybe C", "(B), or (C)", "the answer is B (or perhaps C)",
    "He opens a door or He pours milk", "B or he pours milk", "he opens a door (maybe he sits down)",
]  # fmt: skip
TVG_HEDGES = [
    "3-7. 9-12.", "3 - 7 s (9 - 12 s)", "3-7 vs. 9-12", "3-7 + 9-12",
    "The answer is 3-7, but 9-12 is also possible", "3 - 7 s, or 9 - 12 s", "[3, 7], or [9, 12]",
    "3-7 9-12",
]  # fmt: skip
OE_HEDGES = [
    "red | blue square", "red & blue square", "red + blue square", "red square (blue square)",
    "red square; blue square", "a red square or a blue square", "red/blue square",
    "red, maybe blue square",
]  # fmt: skip
#: per question type: the gold, the options, and the committed wrong answer that bounds a hedge
BOUNDS = {
    "mcq": ("B", OPTIONS, "C"),
    "tvg": ([3.0, 7.0], None, "9 - 12 s"),
    "oe": (SQUARE, None, "a blue square"),
}
HEDGES = (
    [("mcq", h) for h in MCQ_HEDGES]
    + [("tvg", h) for h in TVG_HEDGES]
    + [("oe", h) for h in OE_HEDGES]
)


@pytest.fixture(scope="module")
def wrong_guess(processor, pancake):
    """The committed wrong answer's total per question type (one engine run each)."""
    out = {}
    for qtype, (gold, options, wrong) in BOUNDS.items():
        _, b = run_and_score(processor, pancake, answering(wrong), qtype, gold, options)
        assert b.tool == pytest.approx(0.3)  # executed, no bonus
        out[qtype] = b.total
    return out


@pytest.mark.parametrize("qtype, hedge", HEDGES, ids=[h for _, h in HEDGES])
def test_a_hedge_the_audits_found_scores_no_more_than_a_wrong_guess(
    processor, pancake, wrong_guess, qtype, hedge
):
    gold, options, _ = BOUNDS[qtype]
    now, before = now_and_before(processor, pancake, answering(hedge), qtype, gold, options)
    assert now.acc == 0.0 and now.tool == pytest.approx(0.3), (now, before)
    assert now.total <= wrong_guess[qtype] + 1e-9, (now, before)


#: the hedges the 4 Dec 2026 audit found open; the others were closed on 3 Dec
AUDIT_4_DEC = {
    "B | C", "B - C", "B – or C", "B ∨ C", "B >> C", "B unless C", "B 还是 C",
    "B. C might also be right.", "Answer: B\nAnswer: C", "The answer is B. The answer is C.",
    "B. He pours milk.", "3-7. 9-12.", "3 - 7 s (9 - 12 s)", "3-7 vs. 9-12", "3-7 + 9-12",
    "The answer is 3-7, but 9-12 is also possible", "red | blue square", "red & blue square",
    "red + blue square", "red square (blue square)", "red square; blue square",
}  # fmt: skip


def test_the_frozen_rule_paid_exactly_the_hedges_the_4_dec_audit_found(
    processor, pancake, wrong_guess
):
    """Under the frozen rule, exactly the 4 Dec audit's hedges beat a wrong guess (the issue's
    2.80 and 2.47) and the 3 Dec ones did not: the test above is not vacuous, and the frozen copy
    is the rule the audit measured."""
    paid = set()
    for qtype, hedge in HEDGES:
        gold, options, _ = BOUNDS[qtype]
        _, before = now_and_before(processor, pancake, answering(hedge), qtype, gold, options)
        if before.total > wrong_guess[qtype] + 1e-9:
            paid.add(hedge)
    assert paid == AUDIT_4_DEC


def test_a_generic_noun_earns_no_tool_bonus(processor, pancake, wrong_guess):
    """``square`` for gold ``a red square``: F1 0.67, over the 0.5 threshold, but the bonus asks
    for every content word of the gold. Before: the bonus was paid."""
    now, before = now_and_before(processor, pancake, answering("square"), "oe", SQUARE, None)
    assert now.acc == pytest.approx(2 / 3) and now.tool == pytest.approx(0.3)
    assert before.tool == pytest.approx(0.8) and before.total > now.total
    _, full = run_and_score(processor, pancake, answering("red square"), "oe", SQUARE, None)
    assert full.tool == pytest.approx(0.8)


@pytest.mark.parametrize(
    "answer", ["The answer is B; A is wrong.", "B, because A and C show other actions"]
)
def test_an_answer_that_rejects_the_others_scores_as_its_letter(processor, pancake, answer):
    now, before = now_and_before(processor, pancake, answering(answer))
    _, honest = run_and_score(processor, pancake, answering("B"))
    assert now.total == pytest.approx(honest.total)
    assert before.total < honest.total  # the old rule read two letters: no answer


def test_an_unclosed_think_is_clipped_away_after_a_call_as_in_the_reference(processor, pancake):
    """The protocol's R_fmt is clip(base + λ·anchor, 0, 1) (docs/PROTOCOL.md §5.2, as the
    reference composes it). After an executed call with a substantive think before it, the base
    terms reach 1.0 (1.1 when balanced), so a think left open — in the tool turn or in the final
    turn — is clipped away. The −0.3 bites only where the base terms leave room: when no turn
    closes a substantive think (anchor −0.3 alone), and in an episode without a call."""
    closed_turns = [THINK + GOOD, ANSWER]
    _, closed = run_and_score(processor, pancake, closed_turns)
    open_tool = ["I need to see the middle of the clip first.\n" + GOOD, ANSWER]
    open_final = [THINK + GOOD, "The window shows the answer clearly.\n<answer>B</answer>"]
    for turns in (open_tool, open_final):
        _, b = run_and_score(processor, pancake, turns)
        assert b.anchor < closed.anchor and b.fmt == closed.fmt == 1.0
        assert b.total == pytest.approx(closed.total)
    # no turn closes its think: the anchor is −0.3 alone, and R_fmt falls below 1
    both_open = [open_tool[0], open_final[1]]
    _, b = run_and_score(processor, pancake, both_open)
    assert b.anchor == pytest.approx(-0.3) and b.fmt < 1.0 and b.total < closed.total
    # no call: the same think left open costs λ·0.3 and the balanced term
    _, open_direct = run_and_score(processor, pancake, ["I saw it in the overview.\n<answer>B"])
    _, closed_direct = run_and_score(processor, pancake, [ANSWER])
    assert open_direct.total < closed_direct.total


#: Reasoning that costs nothing, from the audits: each earned every think term before (2.8 with a
#: call over the whole video), and earns nothing over no reasoning now. The generated version of
#: this list is tests/rewards/test_reward_filler.py.
FILLER = [
    "..........", "ok ok ok ok ok", "0123456789", "hmm, hmm, hmm.", "x" * 40, "a b c d e f",
    "\u3164" * 12, "ㅤㅤ ㅤㅤㅤ ㅤㅤㅤㅤ", "What does the man do?", "aa bb cc dd", "la la la la",
    "lorem ipsum dolor", "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
]  # fmt: skip


#: the filler the 4 Dec 2026 audit found still paid; the rest was closed on 3 Dec
FILLER_4_DEC = {
    "ㅤㅤ ㅤㅤㅤ ㅤㅤㅤㅤ", "What does the man do?", "aa bb cc dd", "lorem ipsum dolor",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
}  # fmt: skip


@pytest.fixture(scope="module")
def no_reasoning(processor, pancake):
    """The filler rows' bound: the same episode with no reasoning (and, beside it, with some)."""
    _, none = run_and_score(
        processor, pancake, ["</think>\n" + WHOLE, "</think>\n<answer>B</answer>"]
    )
    _, honest = run_and_score(processor, pancake, [THINK + WHOLE, ANSWER])
    assert none.total < honest.total
    return none.total


@pytest.mark.parametrize("filler", FILLER)
def test_filler_reasoning_earns_nothing_over_none(processor, pancake, no_reasoning, filler):
    turns = [f"{filler}</think>\n" + WHOLE, f"{filler}</think>\n<answer>B</answer>"]
    now, before = now_and_before(processor, pancake, turns)
    assert now.acc == 1.0 and now.tool == pytest.approx(0.8)  # the answer and the call are real
    assert now.total == pytest.approx(no_reasoning), (now, before)
    # the frozen rule paid the think terms for exactly the 4 Dec audit's filler
    assert (before.total > no_reasoning + 1e-9) == (filler in FILLER_4_DEC), before


# ------------------------------------------------------- the third audit's kinds, through the engine
#
# One row per kind of hole the third reward audit found (docs/ANSWERS.md: normalising, rejection,
# after the answer, open-ended lists, reasoning in any script), each written here in its own
# words (the audit's strings are not copied), run through the engine and ``score_episode``. The
# generated versions are test_reward_reading.py, test_reward_notations.py and
# test_reward_languages.py.

#: exploits: each must score no more than the committed wrong answer of its question type
THIRD_AUDIT_HEDGES = [
    ("mcq", "B or \u0421"),  # a Cyrillic С
    ("mcq", "\u216d | B"),  # the Roman numeral one hundred
    ("mcq", "\uff22 or \uff23"),  # fullwidth
    ("oe", "red blue square"),
    ("oe", "red, blue, green square"),
]


@pytest.mark.parametrize("qtype, hedge", THIRD_AUDIT_HEDGES, ids=[h for _, h in THIRD_AUDIT_HEDGES])
def test_a_lookalike_or_listed_hedge_scores_no_more_than_a_wrong_guess(
    processor, pancake, wrong_guess, qtype, hedge
):
    gold, options, _ = BOUNDS[qtype]
    _, b = run_and_score(processor, pancake, answering(hedge), qtype, gold, options)
    assert b.acc == 0.0 and b.total <= wrong_guess[qtype] + 1e-9


@pytest.mark.parametrize(
    "final",
    [
        "The window shows it.</think>\n<answer>B</answer>\nWait, it is C.",
        "The window shows it.</think>\n<answer>B</answer> Sorry, I meant C",
        "The window shows it.</think>\n<answer>B</answer><answer>C</answer>",
        "The window shows it.</think>\n<answer>It can't be B</answer>",
        "The window shows it.</think>\n<answer>~~B~~</answer>",
    ],
)
def test_a_withdrawn_or_rejected_answer_is_no_answer(processor, pancake, wrong_guess, final):
    _, b = run_and_score(processor, pancake, [THINK + GOOD, final])
    assert b.acc == 0.0 and b.tool == pytest.approx(0.3)
    assert b.total <= wrong_guess["mcq"] + 1e-9


@pytest.mark.parametrize(
    "answer", ["\uff22", "\U0001d401", "\u0392", "B, nicht C", "C ist falsch, B"]
)
def test_an_honest_answer_in_another_form_scores_as_its_letter(processor, pancake, answer):
    _, b = run_and_score(processor, pancake, answering(answer))
    _, honest = run_and_score(processor, pancake, answering("B"))
    assert b.acc == 1.0 and b.total == pytest.approx(honest.total)


#: (reasoning, what it earns): honest reasoning in another language is paid as English is;
#: letters of a script with none of its grammatical words, a recited alphabet and a looped
#: sentence are paid as no reasoning
REASONING_IN_ANY_SCRIPT = [
    ("Нужно посмотреть, что происходит в середине.", "english"),
    ("Necesito ver la mitad del vídeo primero.", "english"),
    ("Ich muss zuerst die Mitte des Videos ansehen.", "english"),
    (
        "It is the \u044b\u0432\u0430\u043f\u0440 \u043e\u043b\u0434\u0436 \u0444\u044b\u0432\u0430",
        "none",
    ),
    ("\uac00\ub098\ub2e4\ub77c \ub9c8\ubc14\uc0ac \uc544\uc790\ucc28", "none"),
    ("\u0e01\u0e02\u0e04\u0e07 \u0e08\u0e09\u0e0a\u0e0b", "none"),
    ("Let me check the video. Let me check the video. Let me check the video.", "none"),
]


@pytest.mark.parametrize(("reasoning", "paid"), REASONING_IN_ANY_SCRIPT)
def test_reasoning_in_any_script_is_paid_as_a_language_or_as_none(
    processor, pancake, no_reasoning, reasoning, paid
):
    turns = [f"{reasoning}</think>\n" + WHOLE, f"{reasoning}</think>\n<answer>B</answer>"]
    _, b = run_and_score(processor, pancake, turns)
    assert b.acc == 1.0
    if paid == "none":
        assert b.total == pytest.approx(no_reasoning)
    else:
        _, english = run_and_score(processor, pancake, [THINK + WHOLE, ANSWER])
        assert b.total == pytest.approx(english.total) and b.total > no_reasoning
