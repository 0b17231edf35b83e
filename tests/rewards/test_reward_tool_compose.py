"""R_tool from execution counts, and the composed reward with its breakdown."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from paravt.rewards import RewardBreakdown, RewardConfig, compose, final_answer_text, tool_reward
from paravt.schema.tools import ToolCounts

CALL = (
    '<tool_call>{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}</tool_call>'
)


@pytest.mark.parametrize(
    "parseable, executed, errors, acc, expected",
    [
        (0, 0, 0, 0.0, 0.0),  # no call
        (0, 0, 3, 0.0, 0.0),  # only broken calls
        (0, 0, 0, 1.0, 0.0),  # correct without a call: no tool credit (documented choice)
        (1, 0, 1, 0.0, 0.1),  # parseable, failed to execute
        (2, 1, 1, 0.0, 0.3),  # at least one executed
        (5, 5, 0, 0.49, 0.3),  # below the correctness threshold
        (1, 0, 1, 0.5, 0.1),  # parsed, none ran, correct: the parse credit only, no bonus
        (4, 0, 4, 1.0, 0.1),  # many calls that cannot run: still only the parse credit
        (3, 2, 1, 1.0, 0.8),  # executed + correct
        (0, 1, 0, 1.0, 0.8),  # executed implies a call even if the count says otherwise
    ],
)
def test_tool_levels(parseable, executed, errors, acc, expected):
    ex = ToolCounts(parseable_calls=parseable, executed_ok=executed, errors=errors)
    assert tool_reward(ex, acc) == pytest.approx(expected)


def test_tool_reward_config_and_inputs():
    ex = ToolCounts(parseable_calls=0)
    assert tool_reward(ex, 1.0, RewardConfig(tool_bonus_requires_call=False)) == 0.5
    big = RewardConfig(tool_executed=0.9, tool_correct_bonus=0.5)
    assert tool_reward(ToolCounts(1, 1, 0), 1.0, big) == 1.0  # clipped to [0, 1]
    # the engine's counts object, a dict, or nothing
    counts = SimpleNamespace(parseable_calls=2, executed_ok=1, errors=0, parse_errors=3)
    assert tool_reward(counts, 0.0) == pytest.approx(0.3)
    assert tool_reward({"parseable_calls": 1}, 1.0) == pytest.approx(0.1)
    assert tool_reward({"parseable_calls": 1, "executed_ok": 1}, 1.0) == pytest.approx(0.8)
    # the strict reading: a call that did not run earns nothing at all
    assert tool_reward({"parseable_calls": 1}, 1.0, RewardConfig(tool_parseable=0.0)) == 0.0
    assert tool_reward(None, 1.0) == 0.0
    assert ToolCounts.of({"parseable_calls": "x", "executed_ok": -4}) == (ToolCounts(0, 0, 0))


def test_tool_reward_reads_no_text():
    # a completion that hallucinates <tool_response> gains nothing: R_tool only sees execution
    r = compose(
        "",
        CALL + "<tool_response>8 frames</tool_response><answer>B</answer>",
        ToolCounts(0, 0, 1),
        "B",
        "mcq",
        ["a", "b"],
    )
    assert r.tool == 0.0


def test_compose_breakdown():
    r = compose(
        "<think>\n",
        "I look at 10 to 20 s.</think>" + CALL + "<think>The dog leaves the room.</think>"
        "<answer>B</answer>",
        ToolCounts(parseable_calls=1, executed_ok=1, errors=0),
        gold="B",
        question_type="mcq",
        options=["a cat", "a dog", "a bird", "a fish"],
    )
    assert isinstance(r, RewardBreakdown)
    assert r.acc == 1.0
    assert r.fmt_base == pytest.approx(1.1) and r.anchor == pytest.approx(0.7)
    assert r.fmt == 1.0
    assert r.tool == pytest.approx(0.8)
    assert r.total == pytest.approx(1.0 + 1.0 * 1.0 + 0.8)
    assert set(r.to_dict()) == {"acc", "fmt", "anchor", "tool", "total", "fmt_base"}


def test_compose_weight_and_vanilla():
    # a substantive think left open before the answer: base 0.2 + 0.3 + 0.2, anchor -0.3
    args = ("", "<think>I look at it twice <answer>A</answer>", ToolCounts(), "B", "mcq")
    paper = compose(*args)
    assert paper.acc == 0.0 and paper.tool == 0.0
    assert paper.fmt == pytest.approx(0.7 - 0.5 * 0.3)
    half = compose(*args, cfg=RewardConfig(format_weight=0.5))
    assert half.total == pytest.approx(0.5 * paper.fmt)
    vanilla = compose(*args, cfg=RewardConfig.vanilla())  # the reference baseline's 0.3 + 0.2 + 0.1
    assert vanilla.fmt == pytest.approx(0.6) and vanilla.anchor == pytest.approx(-0.3)


def test_prefilled_think_changes_the_reward():
    completion = "The clip shows a dog.</think><answer>B</answer>"
    with_prefill = compose("<think>\n", completion, None, "B", "mcq")
    without = compose("", completion, None, "B", "mcq")
    assert with_prefill.anchor == pytest.approx(0.7) and without.anchor == 0.0
    assert with_prefill.total > without.total


def test_empty_tag_exploit_earns_no_answer_credit():
    r = compose("", "<think></think><answer></answer>", None, "A", "mcq", ["x", "y"])
    assert r.acc == 0.0 and r.tool == 0.0
    assert r.fmt_base == pytest.approx(0.1)  # balanced only; no answer terms
    assert r.anchor == 0.0  # closing an empty think is no close
    assert r.fmt == pytest.approx(0.1)


def test_final_answer_is_the_last_turns():
    completion = "<think>a</think><answer>A</answer>" + CALL + "<think>b</think><answer>C</answer>"
    assert final_answer_text(completion) == "<answer>C</answer>"
    assert compose("", completion, None, "C", "mcq").acc == 1.0
    assert compose("", completion, None, "C", "mcq", answer="A").acc == 0.0  # record's answer wins
    with_response = CALL + "<tool_response>4 frames</tool_response>\n<think>x</think>D"
    assert final_answer_text(with_response) == "\n<think>x</think>D"
    assert compose("", with_response, None, "D", "mcq").acc == 1.0


@pytest.mark.parametrize(
    "qtype, completion, gold, acc",
    [
        ("tvg", "<think>the event</think><answer>12.0 - 20.5</answer>", [12, 20.5], 1.0),
        ("tvg", "<think>the event</think><answer>[12, 20.5]</answer>", [12, 20.5], 1.0),
        ("oe", "<think>count</think><answer>two people</answer>", "two people", 1.0),
        ("mcq", "<think>x</think><answer>E</answer>", "E", 1.0),
    ],
)
def test_compose_by_question_type(qtype, completion, gold, acc):
    assert compose("", completion, None, gold, qtype).acc == pytest.approx(acc)


def test_compose_takes_the_turns_of_an_episode():
    """The turn boundary is explicit; an earlier tool turn's answer earns nothing."""
    tool_turn = "<think>Look at the start first.</think><answer>A</answer>" + CALL
    final = "<think>The start shows a dog.</think>"
    ex = ToolCounts(parseable_calls=1, executed_ok=1)
    r = compose("", [tool_turn, final], ex, "A", "mcq", ["a dog", "a cat"])
    assert r.acc == 0.0  # the final turn holds no answer
    assert r.fmt_base == pytest.approx(0.2 + 0.3 + 0.1) and r.anchor == pytest.approx(0.4)
    answered = compose("", [tool_turn, final + "<answer>B</answer>"], ex, "B", "mcq", ["x", "y"])
    assert answered.acc == 1.0
    assert answered.fmt_base == pytest.approx(1.1) and answered.anchor == pytest.approx(0.7)
    # the same episode joined into one string would have read turn 0's answer
    assert compose("", tool_turn + final, ex, "A", "mcq").fmt_base == pytest.approx(1.1)


def test_one_tool_counts_record_for_the_engine_the_reward_and_eval():
    """The engine's counts, the reward's and an eval line's are one type: no copy under other
    names (the eval line is a view of it); the old reward name still answers, with a
    FutureWarning naming the release that removes it."""
    import paravt.rewards
    from paravt.eval.results import ToolUsage
    from paravt.schema.episodes import EpisodeRecord
    from paravt.schema.episodes import ToolCounts as EngineCounts

    assert EngineCounts is ToolCounts
    assert (
        type(EpisodeRecord("e", "v", "q", "mcq", None, "A", "parallel", "frames").tool_counts)
        is ToolCounts
    )
    counts = ToolCounts(parseable_calls=2, executed_ok=1, errors=1, parse_errors=1)
    view = ToolUsage(counts, attempted=2, turns=3)
    counts.executed_ok += 1  # the engine counting on: the view follows
    assert (view.executed, view.parseable, view.malformed, view.tool_errors) == (2, 2, 1, 1)
    assert ToolUsage.from_dict(view.to_dict()) == view
    with pytest.warns(FutureWarning, match="removed in paravt 0.2"):
        assert paravt.rewards.ToolExecutionSummary is ToolCounts
