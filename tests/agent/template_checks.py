"""The checks every chat template must pass, as plain functions over an episode record.

A plain module (tests/ has no packages): the conformance tests import it by name.
"""

from __future__ import annotations

import json

from paravt.agent.chat import ASSISTANT_HEADER
from paravt.agent.prompts import tool_schema


def call_block(start: float, end: float) -> str:
    """A call the way Qwen models write one (the Hermes ``<tool_call>`` JSON block)."""
    args = {"video_path": "video", "start_time": start, "end_time": end}
    return (
        "<tool_call>\n" + json.dumps({"name": "crop_video", "arguments": args}) + "\n</tool_call>"
    )


def thinking_turn(reasoning: str, rest: str):
    """A script item: the model's text after whatever the prompt pre-filled.

    Written with the spacing Qwen3 templates re-render (``<think>\\n…\\n</think>\\n\\n``), so the
    only stream/messages difference left is the documented one. When the prompt already ends in
    ``<think>\\n`` (a Thinking template or ``think_prefix``), the model continues inside it.
    """

    def item(req):
        body = f"{reasoning}\n</think>\n\n{rest}"
        return body if req.prefill.endswith("<think>\n") else "<think>\n" + body

    return item


def stream_text(rec, codec) -> str:
    """The decoded token stream with each run of image pads folded to one pad (as rendered)."""
    pad = codec.image_token_id
    folded: list[int] = []
    for t in rec.stream.token_ids:
        if t == pad and folded and folded[-1] == pad:
            continue
        folded.append(t)
    return codec.decode(folded)


def assert_schema_once(rec, codec, tool_prompt: str) -> None:
    """The crop_video schema is in the first prompt exactly once, where ``tool_prompt`` puts it."""
    prompt = codec.decode(rec.stream.token_ids[: rec.stream.prompt_len])
    schema = json.dumps(tool_schema())
    assert prompt.count(schema) == 1, prompt[:2000]
    desc = tool_schema()["function"]["description"]
    assert prompt.count(desc) == 1
    at = prompt.index(schema)
    if tool_prompt == "native":
        assert "Its definition:" not in prompt
        if codec.renders_tools:  # the template's own tools section wrote it, not our text
            assert rec.tools == [tool_schema()] and schema not in rec.messages[0]["content"]
        else:  # the Hermes block closes our system text
            assert rec.tools is None and schema in rec.messages[0]["content"]
        if codec.renders_tools and "<tools>" not in codec.render(
            [{"role": "user", "content": "q"}], tools=rec.tools
        ):
            return  # the project's tiny template: its own plain tools section
        assert prompt.rfind("<tools>", 0, at) >= 0 and prompt.find("</tools>", at) > at
    else:
        assert "<tools>" not in prompt and prompt[:at].endswith("Its definition:\n")


def assert_pads_match_grids(rec, codec) -> None:
    """Every run of image pads has exactly its image's feature count, in image order."""
    pad = codec.image_token_id
    runs, n = [], 0
    for t in rec.stream.token_ids + [None]:
        if t == pad:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    assert runs == [codec.tokens_for_grid(im.grid_thw) for im in rec.stream.images]
    assert len(runs) == len(rec.stream.images) > 0


def assert_think_once_per_turn(rec, codec) -> None:
    """Each assistant turn of the stream opens ``<think>`` exactly once (never doubled)."""
    text = stream_text(rec, codec)
    turns = text.split(ASSISTANT_HEADER)[1:]
    assert len(turns) == len(rec.turns)
    for turn in turns:
        body = turn.split("<|im_end|>")[0]
        assert body.count("<think>") == 1, body
    assert "<think>\n<think>" not in text and "<think><think>" not in text


def last_query_index(messages) -> int:
    """Index of the last user message that is not only tool responses (the Thinking template's rule)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m["role"] != "user":
            continue
        content = m["content"]
        text = (
            content
            if isinstance(content, str)
            else "".join(
                p.get("text", "") if p.get("type") == "text" else "<image>" for p in content
            )
        )
        if not (text.startswith("<tool_response>") and text.endswith("</tool_response>")):
            return i
    return -1


def assert_stream_matches_messages(rec, codec) -> None:
    """The documented relationship between ``record.stream.token_ids`` and ``record.messages``.

    The stream is the template's rendering of ``messages`` (+ ``tools``), except on a template that
    strips reasoning (``codec.strips_reasoning``: Qwen3-VL Thinking): there every assistant turn
    before the last real user message — the forced-answer message, or with the reference layout a
    tool result with frames — is rendered without its ``<think>…</think>``, while the stream keeps
    the turn as generated. Nothing else may differ.
    """
    rendered = codec.render(rec.messages, tools=rec.tools)
    streamed = stream_text(rec, codec)
    if codec.strips_reasoning:
        cut = last_query_index(rec.messages)
        assistant = [i for i, m in enumerate(rec.messages) if m["role"] == "assistant"]
        for i, turn in zip(assistant, rec.turns, strict=True):
            assert rec.messages[i]["content"] == turn.text
            if i < cut:
                kept = ASSISTANT_HEADER + turn.text
                stripped = ASSISTANT_HEADER + turn.text.split("</think>")[-1].lstrip("\n")
                assert streamed.count(kept) == 1
                streamed = streamed.replace(kept, stripped)
    assert rendered == streamed + "\n"


def assert_prompts_are_prefixes(backend, rec) -> None:
    """Every main-agent request saw a prefix of the final stream (appended, never re-rendered)."""
    for batch in backend.batches:
        for req in batch:
            if req.role == "main" and req.episode_id == rec.id:
                assert rec.stream.token_ids[: len(req.tokens.ids)] == req.tokens.ids


def check_episode(rec, codec, backend, tool_prompt: str) -> None:
    assert rec.status == "ok", rec.error
    assert_schema_once(rec, codec, tool_prompt)
    assert_pads_match_grids(rec, codec)
    assert_think_once_per_turn(rec, codec)
    assert_stream_matches_messages(rec, codec)
    assert_prompts_are_prefixes(backend, rec)
