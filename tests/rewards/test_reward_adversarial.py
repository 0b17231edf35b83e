"""Completions built to earn reward without doing the work, run through the real engine (a
scripted backend over a real video, real tool execution) and scored by the trainer's own
``score_episode`` with the paper's constants (gold B, λ_anchor 0.5, pre-fill ``<think>\\n``).

Each row is one exploit an audit found; the assertions are the rules that close it
(docs/TRAIN.md "Reward rules"): a call that cannot run earns at most the parse credit and never
the correctness bonus; a think-less call under the pre-fill earns no think term; "B or C" is no
answer; "Video 3 shows it 12 times" is no span. The 3 Dec 2026 audit added hedges in every form (an
open-ended "X or Y", ``B (or C)``, two option texts, two spans joined by ", or": no answer),
filler reasoning (no think term), and the unclosed think that the protocol's clip absorbs after a
call (kept: the reference composes R_fmt that way); those rows carry their totals before and after.
"""

from __future__ import annotations

import pytest

from paravt.agent.config import CropSettings, EngineConfig
from paravt.agent.engine import EpisodeEngine
from paravt.agent.records import EpisodeInput
from paravt.backends.scripted import ScriptedBackend
from paravt.rewards import RewardConfig
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


# ------------------------------------------------------------- the 3 Dec 2026 audit's holes
#
# Each exploit the 3 Dec 2026 audit found, beside the honest completion it must not beat. The
# bound is "an honest wrong answer's reward plus the tool terms it truly earned": for a hedge, the
# same episode committing to a wrong candidate (same format, same executed call, so R_tool 0.3
# and no bonus); for filler reasoning, the same episode with no reasoning at all; for an unclosed
# think, the same episode with it closed. ``before`` is the total under the rules before that audit
# (main at 5ed035b), ``after`` the total now; both measured through this engine and
# ``score_episode``.

WHOLE = crop('{"video_path": "video", "start_time": 0, "end_time": 10.4}')  # the whole video


def answering(answer: str) -> list[str]:
    """A tool episode with honest reasoning, one executed call, and this final answer."""
    return [THINK + GOOD, f"The window shows it clearly.</think>\n<answer>{answer}</answer>"]


# (id, turns, question type, gold, options, honest bound's turns, before, after)
HOLES = [
    # open-ended: token F1 paid both candidates' words; 0.57 cleared the 0.5 bonus threshold
    (
        "oe: two candidates joined by 'or'",
        answering("a red square or a blue square"),
        "oe",
        "a red square",
        None,
        answering("a green circle"),
        2.371,
        1.3,
    ),
    # mcq: "(or" hid the second letter from the hedge rule, which read B
    ("mcq: B (or C)", answering("B (or C)"), "mcq", "B", OPTIONS, answering("C"), 2.8, 1.3),
    # mcq: two option texts joined by "or" read as the longer option (B)
    (
        "mcq: two option texts joined by 'or'",
        answering("He opens a door or He pours milk"),
        "mcq",
        "B",
        OPTIONS,
        answering("He pours milk"),
        2.8,
        1.3,
    ),
    # tvg: ", or" between two spans was not read as an alternative
    (
        "tvg: two spans joined by ', or'",
        answering("3 - 12 s, or 20 - 25 s"),
        "tvg",
        [3.0, 12.0],
        None,
        answering("20 - 25 s"),
        2.8,
        1.3,
    ),
    # think: any 10 characters counted as reasoning, with a call over the whole video: full marks
    (
        "think: 10 junk characters, a call over the whole video",
        ["aaaaaaaaaa</think>\n" + WHOLE, "aaaaaaaaaa</think>\n<answer>B</answer>"],
        "mcq",
        "B",
        OPTIONS,
        ["</think>\n" + WHOLE, "</think>\n<answer>B</answer>"],
        2.8,
        2.4,
    ),
]


@pytest.mark.parametrize("row", HOLES, ids=[r[0] for r in HOLES])
def test_each_hole_of_the_audit_is_closed(processor, pancake, row):
    _, turns, qtype, gold, options, honest_turns, before, after = row
    _, b = run_and_score(processor, pancake, turns, qtype, gold=gold, options=options)
    assert b.total == pytest.approx(after, abs=1e-3)
    assert after < before  # the hole paid more before
    _, honest = run_and_score(processor, pancake, honest_turns, qtype, gold=gold, options=options)
    assert b.total <= honest.total + 1e-9, (b, honest)


def test_an_unclosed_think_is_clipped_away_after_a_call_as_in_the_reference(processor, pancake):
    """The protocol's R_fmt is clip(base + λ·anchor, 0, 1) (docs/PROTOCOL.md §5.2, as the
    reference composes it): after an executed call the base terms reach 1.0 (1.1 when balanced),
    so the −0.3 of a think left open in the tool turn is clipped away. That is the paper's
    composition, kept. Without a call the base terms stop at 0.8 and the penalty is paid."""
    reasoning = "I need to see the middle of the clip first.\n"  # no </think>: left open
    _, unclosed = run_and_score(processor, pancake, [reasoning + GOOD, ANSWER])
    _, closed = run_and_score(processor, pancake, [THINK + GOOD, ANSWER])
    assert unclosed.anchor == pytest.approx(0.4 + 0.3 - 0.3) and closed.anchor == pytest.approx(0.7)
    assert unclosed.fmt_base == pytest.approx(1.0) and closed.fmt_base == pytest.approx(1.1)
    assert unclosed.fmt == closed.fmt == 1.0  # before and after the audit: 2.8 both
    assert unclosed.total == pytest.approx(closed.total) == pytest.approx(2.8)
    # no call: the same think left open costs λ·0.3 and the balanced term
    _, open_direct = run_and_score(processor, pancake, ["I saw it in the overview.\n<answer>B"])
    _, closed_direct = run_and_score(processor, pancake, [ANSWER])
    assert open_direct.total < closed_direct.total


# An independent table: other strings of the same kinds, each scored against its honest bound
# (the same episode committing to a wrong candidate). Every one of them is no answer now: R_acc 0,
# R_tool 0.3 (the call executed, no bonus), total 1.3. The last column is its total before the
# audit (5ed035b; 1.3 where an older rule had already closed it).
OTHER_HEDGES = [
    ("oe", "red", None, "red/blue", 2.47),
    ("oe", "red", None, "either red or blue", 1.7),
    ("oe", "red", None, "red, maybe blue", 2.3),
    ("oe", "red", None, "red (or possibly blue)", 1.7),
    ("oe", "the man opens the door", None, "he opens the door or he sits down", 1.7),
    ("mcq", "B", OPTIONS, "B or maybe C", 2.8),
    ("mcq", "B", OPTIONS, "(B), or (C)", 2.8),
    ("mcq", "B", OPTIONS, "the answer is B (or perhaps C)", 2.8),
    ("mcq", "B", OPTIONS, "B / C", 1.3),
    ("mcq", "B", OPTIONS, "B; C", 1.3),
    ("mcq", "B", OPTIONS, "B or he pours milk", 2.8),
    ("mcq", "B", OPTIONS, "either he opens a door or he pours milk", 2.8),
    ("mcq", "B", OPTIONS, "He pours milk / He opens a door", 2.8),
    ("mcq", "B", OPTIONS, "he opens a door (maybe he sits down)", 2.8),
    ("tvg", [3.0, 12.0], None, "3-12 or 20-25", 1.3),
    ("tvg", [3.0, 12.0], None, "[3, 12], or [20, 25]", 2.8),
    ("tvg", [3.0, 12.0], None, "3 - 12 s (or maybe 20 - 25 s)", 2.8),
    ("tvg", [3.0, 12.0], None, "the answer is 3-12 s, or possibly 20-25 s", 2.8),
    ("tvg", [3.0, 12.0], None, "0:03-0:12 / 0:20-0:25", 1.3),
    ("tvg", [3.0, 12.0], None, "3-12 20-25", 2.8),
]
WRONG = {"oe": "green", "mcq": "D", "tvg": "20 - 25 s"}


@pytest.fixture(scope="module")
def wrong_guess(processor, pancake):
    """The honest wrong answer's total per question type (one engine run each)."""
    golds = {"oe": ("red", None), "mcq": ("B", OPTIONS), "tvg": ([3.0, 12.0], None)}
    out = {}
    for qtype, (gold, options) in golds.items():
        _, b = run_and_score(processor, pancake, answering(WRONG[qtype]), qtype, gold, options)
        assert b.acc == 0.0 and b.tool == pytest.approx(0.3)
        out[qtype] = b.total
    return out


@pytest.mark.parametrize("row", OTHER_HEDGES, ids=[r[3] for r in OTHER_HEDGES])
def test_other_hedges_score_no_more_than_a_wrong_guess(processor, pancake, wrong_guess, row):
    qtype, gold, options, answer, before = row
    _, b = run_and_score(processor, pancake, answering(answer), qtype, gold=gold, options=options)
    assert b.acc == 0.0 and b.tool == pytest.approx(0.3)
    assert b.total <= wrong_guess[qtype] + 1e-9
    assert b.total <= before


#: Reasoning that costs nothing: no think term, no think-before-call, no anchor close or flow
#: (each scored 2.8, full marks, before the audit; 2.4 now, as with no reasoning at all).
FILLER = ["..........", "ok ok ok ok ok", "0123456789", "hmm, hmm, hmm.", "x" * 40, "a b c d e f"]


@pytest.fixture(scope="module")
def no_reasoning(processor, pancake):
    """The filler rows' bound: the same episode with no reasoning (and, beside it, with some)."""
    _, none = run_and_score(
        processor, pancake, ["</think>\n" + WHOLE, "</think>\n<answer>B</answer>"]
    )
    _, honest = run_and_score(processor, pancake, [THINK + WHOLE, ANSWER])
    assert (none.total, honest.total) == (pytest.approx(2.4), pytest.approx(2.8))
    return none.total


@pytest.mark.parametrize("filler", FILLER)
def test_filler_reasoning_earns_nothing_over_none(processor, pancake, no_reasoning, filler):
    turns = [f"{filler}</think>\n" + WHOLE, f"{filler}</think>\n<answer>B</answer>"]
    _, b = run_and_score(processor, pancake, turns)
    assert b.acc == 1.0 and b.tool == pytest.approx(0.8)  # the answer and the call are real
    assert b.total == pytest.approx(no_reasoning)
