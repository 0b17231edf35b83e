"""Whatever the model writes, the engine answers every call block and keeps one consistent stream.

Hypothesis composes turns out of valid calls (windows inside, across and outside the video),
broken blocks, stray tags and free text; the engine runs them over a real video with the tiny
model's chat template and real tools.
"""

from __future__ import annotations

import json

from agent_helpers import small_config
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from paravt.agent.engine import EpisodeEngine
from paravt.backends.scripted import ScriptedBackend
from paravt.grammar import parse_turn
from paravt.schema.episodes import EpisodeInput


def _call(start: float, end: float) -> str:
    args = {"video_path": "v", "start_time": start, "end_time": end}
    return "<tool_call>" + json.dumps({"name": "crop_video", "arguments": args}) + "</tool_call>"


times = st.floats(min_value=-3, max_value=9, allow_nan=False).map(lambda x: round(x, 1))
fragment = st.one_of(
    st.builds(_call, times, times),
    st.sampled_from(
        [
            "<think>Which part shows it?</think>",
            "<tool_call>{",
            "</tool_call>",
            '<tool_call>{"name": "zoom", "arguments": {}}</tool_call>',
            "<tool_code>crop_video(start_time=1, end_time=3)</tool_code>",
            "<answer>A</answer>",
            "<answer>",
            "<think>",
            "\n",
        ]
    ),
    st.text(alphabet="abc AB.:01<>/", max_size=12),
)
turn = st.lists(fragment, max_size=6).map("".join)


@settings(
    max_examples=10,
    deadline=None,
    derandomize=True,  # the same examples in every CI run
    phases=[Phase.explicit, Phase.generate],  # no shrinking: keep a failure's cost bounded
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(turns=st.lists(turn, min_size=3, max_size=3))
def test_any_completions_give_a_complete_consistent_record(turns, q3_processor, bunny):
    backend = ScriptedBackend(turns, processor=q3_processor)
    cfg = small_config(max_turns=2, max_parallel=2)
    [rec] = EpisodeEngine(backend, cfg).run([EpisodeInput("h", bunny, "What?", ["a", "b"])])
    assert rec.status == "ok", rec.error
    codec = backend.codec
    # every call block of a tool turn got exactly one tool message, in order
    tool_runs, current = [], None
    for m in rec.messages[2:]:
        if m["role"] == "assistant":
            current = []
            tool_runs.append(current)
        elif m["role"] == "tool":
            current.append(m)
    for t, msgs in zip(rec.turns, tool_runs, strict=True):
        parsed = parse_turn(t.text)
        final = t.forced or not parsed.is_tool_turn
        assert len(msgs) == (0 if final else len(parsed.calls) + len(parsed.errors))
    assert all(c.status != "ok" or c.n_frames > 0 for c in rec.calls)
    assert sum(c.status == "ok" for c in rec.calls if c.turn == 0) <= 2
    # one stream: each request saw a prefix of it; it spells the rendered conversation
    for batch in backend.batches:
        ids = batch[0].tokens.ids
        assert rec.stream.token_ids[: len(ids)] == ids
    assert len(rec.stream.token_ids) == len(rec.stream.loss_mask) == len(rec.stream.logprobs)
    rendered = codec.expand(
        codec.encode_text(codec.render(rec.messages, tools=rec.tools)),
        [im.grid_thw for im in rec.stream.images],
    )
    # a final turn cut at its token budget stays unclosed in the stream (the template closes it)
    closing = codec.end_of_turn if rec.turns[-1].finish_reason == "length" else ""
    assert codec.decode(rec.stream.token_ids) + closing + "\n" == codec.decode(rendered)
