"""Template conformance: the real Qwen chat templates, tested like the tiny one.

Each real template (../shared/qwen: Qwen2.5-VL-7B-Instruct, Qwen3-VL-8B-Instruct, Qwen3-VL-8B-Thinking
paired with the Instruct tokenizer) sits in a tiny random model built once per session by
``make_tiny_model(from_tokenizer=...)``; the project's own tiny template runs the same checks.
A scripted backend writes what a Qwen model writes (``<think>`` reasoning, Hermes ``<tool_call>``
blocks, two parallel calls), so every template-dependent step is exercised on real frames of a
real video: tool prompt, tool results with images, the generation prompt's ``<think>``, the forced
answer, the stream/messages relationship. Skips cleanly when ../shared/qwen is absent.
"""

from __future__ import annotations

import copy

import pytest
from agent_helpers import small_config
from template_checks import (
    call_block,
    check_episode,
    stream_text,
    thinking_turn,
)
from transformers import AutoProcessor

from paravt.agent import EpisodeEngine, EpisodeInput
from paravt.agent.chat import ASSISTANT_HEADER, ChatCodec, UnsupportedTemplateError
from paravt.backends.openai import OpenAIBackend
from paravt.backends.scripted import ScriptedBackend
from paravt.grammar import parse_turn

REAL = ["qwen2.5-vl-instruct", "qwen3-vl-instruct", "qwen3-vl-thinking"]
ALL = REAL + ["tiny-qwen3-vl"]

_processors: dict = {}


@pytest.fixture
def processor_of(request, tiny_qwen3_dir):
    """Processor of a template by name; a real one skips the test when ../shared/qwen is absent,
    the project's tiny one always runs."""

    def _get(name):
        if name not in _processors:
            if name == "tiny-qwen3-vl":
                folder = tiny_qwen3_dir
            else:
                folder = request.getfixturevalue("real_tiny_dir")(name)
            _processors[name] = AutoProcessor.from_pretrained(str(folder))
        return _processors[name]

    return _get


def _script():
    """Turn 0: two parallel calls; turn 1: one more; turn 2 (forced): the letter."""
    turns = [
        thinking_turn(
            "The overview is sparse; look at both halves.",
            call_block(0, 3) + "\n" + call_block(5, 9),
        ),
        thinking_turn("The first window shows the pan; check the end.", call_block(8, 10)),
        thinking_turn("The pancake is flipped.", "<answer>A</answer>"),
    ]
    return lambda req: turns[req.turn](req)


def _run(processor, pancake, evidence="frames", **cfg):
    sub = thinking_turn("Frames of a kitchen.", "A pancake is flipped in a pan.")
    backend = ScriptedBackend(_script(), processor=processor, subagent=sub)
    engine = EpisodeEngine(backend, small_config(max_turns=2, evidence=evidence, **cfg))
    [rec] = engine.run([EpisodeInput("e", pancake, "What is cooked?", ["A pancake", "Soup"])])
    return rec, backend, engine


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("evidence", ["frames", "subagent"])
def test_episode_with_parallel_calls_and_forced_answer_conforms(
    processor_of, pancake, name, evidence
):
    rec, backend, engine = _run(processor_of(name), pancake, evidence)
    codec = backend.codec
    check_episode(rec, codec, backend, engine.tool_prompt)
    # the parser read what the template's model writes: two calls, then one, then the letter
    assert [c.status for c in rec.calls] == ["ok", "ok", "ok"]
    assert rec.turns[-1].forced and rec.prediction == "A"
    if evidence == "subagent":
        assert len(rec.subagents) == 3
        for sub in rec.subagents:
            assert sub.status == "ok" and sub.messages[-1]["content"] == sub.turns[0].text
            assert codec.render(sub.messages) == stream_text(sub, codec) + "\n"
            assert sub.turns[0].text.count("<think>") == 1
            assert sub.prediction == "A pancake is flipped in a pan."  # reasoning stays out


@pytest.mark.parametrize("name", ALL)
def test_per_family_tool_prompt_default_and_both_forms(processor_of, pancake, name):
    processor = processor_of(name)
    first, backend, engine = _run(processor, pancake)
    expected = "paravt" if name == "qwen2.5-vl-instruct" else "native"
    assert engine.tool_prompt == expected
    other = "paravt" if expected == "native" else "native"
    rec, backend, engine = _run(processor, pancake, tool_prompt=other)
    check_episode(rec, backend.codec, backend, other)
    # Qwen2.5-VL's vision template ignores tools=: native there is a Hermes block in the system text
    if name == "qwen2.5-vl-instruct" and other == "native":
        assert rec.tools is None and "<tools>" in rec.messages[0]["content"]
    if name.startswith("qwen3"):  # the default: the template's own tools section
        assert first.tools is not None and "<tools>" not in first.messages[0]["content"]


def test_thinking_generation_prompt_is_never_doubled(processor_of, pancake):
    """think_prefix "<think>\\n" (the paper recipe) on a template whose prompt already ends in it."""
    codec = ChatCodec(processor_of("qwen3-vl-thinking"))
    assert codec.opening == "<think>\n" and codec.strips_reasoning
    for prefix in ("", "<think>\n", "<think>", "<think>\nLet me look."):
        merged = codec.prefill(prefix)
        assert merged.count("<think>") == 1 and codec.prefill(merged) == merged
    rec, backend, engine = _run(
        processor_of("qwen3-vl-thinking"), pancake, think_prefix="<think>\n"
    )
    check_episode(rec, backend.codec, backend, engine.tool_prompt)
    assert all(t.text.startswith("<think>\n") and t.text.count("<think>") == 1 for t in rec.turns)
    assert not parse_turn(rec.turns[0].text).errors
    # a non-thinking template has no opening, so the prefix is written once, by us
    q3 = ChatCodec(processor_of("qwen3-vl-instruct"))
    assert q3.opening == "" and not q3.strips_reasoning and q3.prefill("<think>\n") == "<think>\n"


def test_thinking_strip_is_what_an_openai_server_sees_at_the_forced_turn(processor_of, pancake):
    """The hf stream keeps turn 0's reasoning at the forced turn; a server that re-renders the
    messages (the openai backend) drops it. Before the forced turn both contexts are equal."""
    rec, backend, _ = _run(processor_of("qwen3-vl-thinking"), pancake)
    codec = backend.codec
    wire = OpenAIBackend("http://127.0.0.1:9/v1", "m", resize_arch="qwen3-vl")
    seen = []
    for batch in backend.batches:
        req = batch[0]
        if req.role != "main":
            continue
        server = codec.render(wire.wire_messages(req), add_generation_prompt=True, tools=req.tools)
        ours = codec.decode(
            [
                t
                for i, t in enumerate(req.tokens.ids)
                if t != codec.image_token_id or req.tokens.ids[i - 1] != t
            ]
        )
        seen.append((req.forced, server == ours, server, ours))
    assert [(f, same) for f, same, _, _ in seen] == [(False, True), (False, True), (True, False)]
    _, _, server, ours = seen[-1]
    first = rec.turns[0].text
    assert first.startswith("<think>\n") and ASSISTANT_HEADER + first in ours
    assert (
        ours.replace(first, first.split("</think>")[-1].lstrip("\n")).replace(
            rec.turns[1].text, rec.turns[1].text.split("</think>")[-1].lstrip("\n")
        )
        == server
    )


@pytest.mark.parametrize("layout", ["template", "paravt"])
@pytest.mark.parametrize("name", ["qwen3-vl-instruct", "qwen3-vl-thinking"])
def test_tool_response_layouts_on_the_real_qwen3_template(processor_of, pancake, layout, name):
    rec, backend, engine = _run(processor_of(name), pancake, tool_response_layout=layout)
    codec = backend.codec
    check_episode(rec, codec, backend, engine.tool_prompt)
    text = stream_text(rec, codec)
    pad = "<|vision_start|><|image_pad|><|vision_end|>"
    if layout == "paravt":  # frames first, then the tags around the text; one message per call
        tool_msgs = [m for m in rec.messages[2:] if m["role"] == "user"][:-1]
        assert len(tool_msgs) == 3 and all(m["content"][0] == {"type": "image"} for m in tool_msgs)
        assert (
            f"{pad}<tool_response>\n2 frames from 0.0s to 3.0s.\n</tool_response><|im_end|>" in text
        )
        assert "<tool_response>\n<|vision_start|>" not in text
    else:  # the template wraps each result, frames included, in one user turn per tool round
        assert [m["role"] for m in rec.messages].count("tool") == 3
        assert f"<|im_start|>user\n<tool_response>\n{pad}" in text
        assert "</tool_response>\n<tool_response>\n" in text


def test_qwen25_tool_results_are_stored_as_rendered(processor_of, pancake):
    """Qwen2.5-VL's vision template writes a bare ``<|im_start|>tool`` turn; the engine sends a
    user turn of <tool_response> blocks instead, and record.messages holds exactly that."""
    rec, backend, _ = _run(processor_of("qwen2.5-vl-instruct"), pancake)
    text = stream_text(rec, backend.codec)
    assert "<|im_start|>tool" not in text
    assert all(m["role"] != "tool" for m in rec.messages)
    assert rec.messages[3]["content"][0]["text"] == "<tool_response>\n"


def test_a_template_that_drops_tool_images_fails_at_engine_start(processor_of):
    processor = copy.deepcopy(processor_of("qwen3-vl-instruct"))
    template = processor.chat_template
    tool_part = template[template.index('{%- elif message.role == "tool" %}') :]
    processor.chat_template = template.replace(
        tool_part, tool_part.replace("<|vision_start|><|image_pad|><|vision_end|>", "", 1)
    )
    backend = ScriptedBackend(["x"], processor=processor)
    with pytest.raises(UnsupportedTemplateError, match="cannot|image placeholders") as err:
        EpisodeEngine(backend, small_config())
    assert backend.codec.name in str(err.value) and "subagent" in str(err.value)
    EpisodeEngine(backend, small_config(evidence="subagent"))  # no tool images: fine
    EpisodeEngine(backend, small_config(tool_response_layout="paravt"))  # frames in user turns
