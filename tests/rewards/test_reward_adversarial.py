"""Completions built to earn reward without doing the work, run through the real engine (a
scripted backend over a real video, real tool execution) and scored by the trainer's own
``score_episode`` with the paper's constants (gold B, λ_anchor 0.5, pre-fill ``<think>\\n``).

Each row is one exploit an audit found; the assertions are the rules that close it
(docs/TRAIN.md "Reward rules"): a call that cannot run earns at most the parse credit and never
the correctness bonus; a think-less call under the pre-fill earns no think term; "B or C" is no
answer; "Video 3 shows it 12 times" is no span.
"""

from __future__ import annotations

import pytest

from paravt.agent.backends.scripted import ScriptedBackend
from paravt.agent.config import CropSettings, EngineConfig
from paravt.agent.engine import EpisodeEngine
from paravt.agent.records import EpisodeInput
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
