"""Token-stream pieces from the chat template: deltas, turn closing, image pads, tool wrapping."""

from __future__ import annotations

import copy

import pytest
from agent_helpers import call, small_config

from paravt.agent.chat import ChatCodec, ChatTemplateError
from paravt.agent.engine import EpisodeEngine
from paravt.agent.records import EpisodeInput
from paravt.testing.scripted import ScriptedBackend


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
    end = rec.loss_mask.index(0, rec.prompt_len)  # first token after the first generated run
    assert rec.token_ids[end] == codec.end_of_turn_id and rec.loss_mask[end] == 0
    full = codec.render(rec.messages)
    expected = codec.expand(codec.encode_text(full), [im.grid_thw for im in rec.images])
    assert rec.token_ids == expected[: len(rec.token_ids)]


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
    text = codec.decode(rec.token_ids)
    assert "<tool_response>\n2 frames from 0.0s to 3.0s.\n</tool_response>" in text
