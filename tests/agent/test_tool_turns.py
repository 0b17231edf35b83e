"""Planning a turn's calls: what runs, and what the model is told about what did not (the
over-cap error must not promise a tool turn that does not exist)."""

from __future__ import annotations

import pytest
from agent_helpers import call, small_config

from paravt.agent.engine import EpisodeEngine
from paravt.agent.tool_turns import plan_calls
from paravt.backends.scripted import ScriptedBackend
from paravt.grammar import parse_turn
from paravt.schema.episodes import EpisodeInput

NEXT_TURN = "Request it in your next turn"
NO_TURN_LEFT = "No tool turn is left: your next turn must give the answer"


@pytest.mark.parametrize("mode, cap", [("parallel", 2), ("sequential", 5)])
def test_calls_that_do_not_run_say_whether_a_tool_turn_follows(mode, cap):
    parsed = parse_turn("<think>look</think>" + call(0, 1) + call(1, 2) + call(2, 3))
    limit = 1 if mode == "sequential" else cap
    cases = [(True, NEXT_TURN, NO_TURN_LEFT), (False, NO_TURN_LEFT, NEXT_TURN)]
    for next_tool_turn, words, absent in cases:
        planned = plan_calls(parsed, 0, mode, cap, next_tool_turn=next_tool_turn)
        assert [p.run for p in planned] == [i < limit for i in range(3)]
        errors = [p.record.error for p in planned if not p.run]
        assert errors and all(words in e and absent not in e for e in errors)


def test_over_cap_on_the_last_tool_round_tells_the_model_to_answer(q3_processor, pancake):
    script = [
        "<think>Three windows.</think>\n" + call(0, 2) + "\n" + call(2, 4) + "\n" + call(4, 6),
        "<think>Enough.</think>\n<answer>A</answer>",
    ]
    backend = ScriptedBackend(script, processor=q3_processor)
    [rec] = EpisodeEngine(backend, small_config(max_turns=1, max_parallel=2)).run(
        [EpisodeInput("e1", pancake, "What does the man do?", ["flips", "opens"], "mcq")]
    )
    assert rec.status == "ok", rec.error
    over = [c for c in rec.calls if c.error_kind == "over_cap"]
    assert len(over) == 1
    assert NO_TURN_LEFT in over[0].error and NEXT_TURN not in over[0].error
    tool_texts = [m["content"][-1]["text"] for m in rec.messages if m["role"] == "tool"]
    assert tool_texts[-1] == over[0].error
    assert rec.prediction == "A" and rec.forced
