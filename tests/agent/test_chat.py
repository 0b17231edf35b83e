"""Token-stream pieces from the chat template: deltas, turn closing, image pads, tool wrapping."""

from __future__ import annotations

import copy

import pytest
from agent_helpers import call, small_config

from paravt.agent.chat import ChatCodec, ChatTemplateError
from paravt.agent.engine import EpisodeEngine
from paravt.backends.scripted import ScriptedBackend
from paravt.schema.episodes import EpisodeInput


def test_delta_closes_a_turn_only_when_the_model_did_not(q3_processor):
    codec = ChatCodec(q3_processor)
    tool = [{"role": "tool", "content": [{"type": "text", "text": "ok"}]}]
    closed = codec.turn_delta_text(tool, closed_by_model=True)
    assert (
        closed
        == "\n<|im_start|>user\n<tool_response>\nok\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    assert codec.turn_delta_text(tool, closed_by_model=False) == "<|im_end|>" + closed
    with pytest.raises(ChatTemplateError, match="more image placeholders than the 1 images"):
        codec.expand([codec.image_token_id, 7, codec.image_token_id], [(1, 2, 2)])
    assert codec.expand([9, codec.image_token_id, 9], [(1, 4, 2)]) == [9] + [
        codec.image_token_id
    ] * 2 + [9]


def test_truncated_turns_get_the_closing_token_outside_the_loss(q3_processor, pancake):
    backend = ScriptedBackend(
        [call(0, 3), "<answer>B</answer>"], processor=q3_processor, stop=False
    )
    [rec] = EpisodeEngine(backend, small_config()).run(
        [EpisodeInput("t", pancake, "Q?", ["a", "b"])]
    )
    codec = backend.codec
    end = rec.stream.loss_mask.index(
        0, rec.stream.prompt_len
    )  # first token after the first generated run
    assert rec.stream.token_ids[end] == codec.end_of_turn_id and rec.stream.loss_mask[end] == 0
    full = codec.render(rec.messages, tools=rec.tools)
    expected = codec.expand(codec.encode_text(full), [im.grid_thw for im in rec.stream.images])
    assert rec.stream.token_ids == expected[: len(rec.stream.token_ids)]


def test_templates_that_do_not_wrap_tool_results_get_tags_from_the_engine(q3_processor, pancake):
    proc = copy.deepcopy(q3_processor)
    proc.chat_template = proc.chat_template.replace("<tool_response>", "").replace(
        "</tool_response>", ""
    )
    codec = ChatCodec(proc)
    assert not codec.wraps_tool_response and ChatCodec(q3_processor).wraps_tool_response
    backend = ScriptedBackend([call(0, 3), "<answer>B</answer>"], processor=proc)
    [rec] = EpisodeEngine(backend, small_config()).run(
        [EpisodeInput("w", pancake, "Q?", ["a", "b"])]
    )
    text = codec.decode(rec.stream.token_ids)
    # the whole result (frames and text) inside the tags, as Qwen3-VL's template renders it
    assert "\n<tool_response>\n<|vision_start|>" in text
    assert "<|vision_end|>2 frames from 0.0s to 3.0s.\n</tool_response><|im_end|>" in text
    # and record.messages holds what was rendered: one user message, no bare tool message
    assert [m["role"] for m in rec.messages] == ["system", "user", "assistant", "user", "assistant"]
    tool_turn = rec.messages[3]["content"]
    assert tool_turn[0] == {"type": "text", "text": "<tool_response>\n"}
    assert tool_turn[-1]["text"].endswith("\n</tool_response>")
    expected = codec.expand(
        codec.encode_text(codec.render(rec.messages, tools=rec.tools)),
        [im.grid_thw for im in rec.stream.images],
    )
    assert (
        rec.stream.token_ids == expected[: len(rec.stream.token_ids)]
    )  # the rendering adds a final newline


def test_a_template_that_rewrites_past_turns_never_rewrites_the_stream(q3_processor, pancake):
    """Qwen3-style templates drop earlier turns' reasoning; the stream keeps what was generated."""
    proc = copy.deepcopy(q3_processor)
    old = "{{ render_content(message.content) if message.content is not none else '' }}"
    assert old in proc.chat_template
    proc.chat_template = proc.chat_template.replace(
        old, "{{ message.content.split('</think>')[-1] }}"
    )
    script = ["<think>first look</think>" + call(0, 3), "<think>then</think><answer>B</answer>"]
    backend = ScriptedBackend(script, processor=proc)
    [rec] = EpisodeEngine(backend, small_config()).run(
        [EpisodeInput("r", pancake, "Q?", ["a", "b"])]
    )
    codec = backend.codec
    assert rec.status == "ok" and rec.prediction == "B"
    # every request saw a prefix of the final stream: history is appended to, never re-rendered
    for batch in backend.batches:
        ids = batch[0].tokens.ids
        assert rec.stream.token_ids[: len(ids)] == ids
    streamed = codec.decode(rec.stream.token_ids)
    assert "<think>first look</think>" in streamed
    # the template itself drops it
    assert "first look" not in codec.render(rec.messages, tools=rec.tools)
