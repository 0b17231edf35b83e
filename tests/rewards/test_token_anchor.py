"""Token-level anchoring lands on the structural tokens of both tiny tokenizers."""

from __future__ import annotations

import pytest

from paravt.rewards import (
    ANCHOR_TAGS,
    DEFAULT_TOKEN_ANCHOR_VALUES,
    anchor_positions,
    anchor_token_bonus,
)

COMPLETION = (
    "The clip is long.</think>"
    '<tool_call>{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 9}}</tool_call>'
    '<tool_call>{"name": "crop_video", "arguments": {"start_time": 20, "end_time": 30}}</tool_call>'
    "<think>Now I see it.</think><answer>B</answer>"
)


@pytest.fixture(params=["tiny_qwen3_dir", "tiny_qwen25_dir"])
def tokenizer(request):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(request.getfixturevalue(request.param))


def test_positions_land_on_the_structural_ids(tokenizer):
    ids = tokenizer.encode(COMPLETION, add_special_tokens=False)
    positions = anchor_positions(ids, tokenizer)
    assert set(positions) == set(ANCHOR_TAGS)
    for tag in ANCHOR_TAGS:
        tag_id = tokenizer.convert_tokens_to_ids(tag)
        assert positions[tag] == [i for i, t in enumerate(ids) if t == tag_id], tag
        assert len(positions[tag]) == COMPLETION.count(tag)
    assert len(positions["</tool_call>"]) == 2 and len(positions["</think>"]) == 2


def test_bonus_vector(tokenizer):
    ids = tokenizer.encode(COMPLETION, add_special_tokens=False)
    values = {"</think>": 0.1, "<answer>": 0.05, "</answer>": 0.02, "</tool_call>": 0.03}
    bonus = anchor_token_bonus(ids, tokenizer, values)
    assert len(bonus) == len(ids)
    by_id = {tokenizer.convert_tokens_to_ids(t): v for t, v in values.items()}
    first = {ids.index(t) for t in by_id}  # one turn: only each tag's first occurrence counts
    for i, t in enumerate(ids):
        assert bonus[i] == pytest.approx(by_id[t] if i in first else 0.0)
    assert sum(bonus) == pytest.approx(0.1 + 0.05 + 0.02 + 0.03)
    # a zero value switches a tag off; defaults are the config's
    off = anchor_token_bonus(ids, tokenizer, {**values, "</think>": 0.0})
    assert sum(off) == pytest.approx(0.05 + 0.02 + 0.03)
    assert sum(anchor_token_bonus(ids, tokenizer)) == pytest.approx(
        sum(DEFAULT_TOKEN_ANCHOR_VALUES.values())
    )


def test_a_tag_split_into_pieces_lands_on_its_last_piece(tokenizer):
    # the model spelled "</answer>" character by character instead of using the special token
    head = tokenizer.encode("<answer>B", add_special_tokens=False)
    pieces = [tokenizer.encode(c, add_special_tokens=False) for c in "</answer>"]
    ids = head + [i for p in pieces for i in p] + tokenizer.encode(" ok", add_special_tokens=False)
    last_piece = len(head) + sum(len(p) for p in pieces) - 1
    assert anchor_positions(ids, tokenizer, ["</answer>"]) == {"</answer>": [last_piece]}
    bonus = anchor_token_bonus(ids, tokenizer, {"</answer>": 1.0})
    assert bonus.index(1.0) == last_piece and sum(bonus) == 1.0


def test_no_tags_and_empty_input(tokenizer):
    ids = tokenizer.encode("just words", add_special_tokens=False)
    assert anchor_token_bonus(ids, tokenizer) == [0.0] * len(ids)
    assert anchor_token_bonus([], tokenizer) == []
    assert anchor_positions([], tokenizer) == {t: [] for t in ANCHOR_TAGS}


def test_repetition_earns_nothing_more(tokenizer):
    """The first occurrence of each tag per turn is credited, repeats are not."""
    once = tokenizer.encode("I see it.</think><answer>B</answer>", add_special_tokens=False)
    many = tokenizer.encode(
        "I see it.</think></think></think></think><answer>B</answer></answer>",
        add_special_tokens=False,
    )
    assert sum(anchor_token_bonus(many, tokenizer)) == pytest.approx(
        sum(anchor_token_bonus(once, tokenizer))
    )
    close = tokenizer.convert_tokens_to_ids("</think>")
    bonus = anchor_token_bonus(many, tokenizer)
    credited = [i for i, t in enumerate(many) if t == close and bonus[i]]
    assert credited == [many.index(close)]


def test_first_occurrence_per_turn_and_unclosed_penalty(tokenizer):
    turn0 = tokenizer.encode("Look.</think></think>", add_special_tokens=False)
    tool = tokenizer.encode("<tool_response>x</tool_response>", add_special_tokens=False)
    turn1 = tokenizer.encode("Still looking and never closing", add_special_tokens=False)
    turn2 = tokenizer.encode("Done.</think><answer>B</answer>", add_special_tokens=False)
    ids = turn0 + tool + turn1 + tool + turn2
    a = len(turn0) + len(tool)
    b = a + len(turn1) + len(tool)
    spans = [(0, len(turn0)), (a, a + len(turn1)), (b, b + len(turn2))]
    v = DEFAULT_TOKEN_ANCHOR_VALUES
    bonus = anchor_token_bonus(ids, tokenizer, turns=spans, open_think=[False, True, False])
    close = tokenizer.convert_tokens_to_ids("</think>")
    # turn 0: its first </think> only; turn 2: its own first </think>, <answer>, </answer>
    assert bonus[turn0.index(close)] == pytest.approx(v["</think>"])
    assert sum(bonus[: len(turn0)]) == pytest.approx(v["</think>"])
    assert sum(bonus[b:]) == pytest.approx(v["</think>"] + v["<answer>"] + v["</answer>"])
    # turn 1 leaves its (pre-filled) think open: the penalty sits on its last token
    assert bonus[a + len(turn1) - 1] == pytest.approx(-v["</think>"])
    assert sum(bonus[a : a + len(turn1)]) == pytest.approx(-v["</think>"])
    # one turn over the whole sequence (the default) credits each tag once in all
    whole = anchor_token_bonus(ids, tokenizer)
    assert sum(whole) == pytest.approx(v["</think>"] + v["<answer>"] + v["</answer>"])


def test_a_hollow_close_earns_no_think_bonus(tokenizer):
    """Under the pre-fill a ``</think>`` straight after the opener closes no reasoning: the turn's
    ``</think>`` bonus goes only where the turn closes a substantive think, like the anchor's
    close term (``substantive_close_turns``)."""
    from paravt.rewards import substantive_close_turns

    calls = COMPLETION.split("</think>", 1)[1].split("<think>")[0]  # the two tool calls
    turns_text = ["</think>" + calls, "I saw it clearly.</think><answer>B</answer>"]
    assert substantive_close_turns(turns_text, "<think>\n") == [False, True]
    ids0 = tokenizer.encode(turns_text[0], add_special_tokens=False)
    ids1 = tokenizer.encode(turns_text[1], add_special_tokens=False)
    ids = ids0 + ids1
    spans = [(0, len(ids0)), (len(ids0), len(ids))]
    values = {"</think>": 0.1, "<answer>": 0.0, "</answer>": 0.0, "</tool_call>": 0.0}
    closed = substantive_close_turns(turns_text, "<think>\n")
    bonus = anchor_token_bonus(ids, tokenizer, values, turns=spans, think_closed=closed)
    close_id = tokenizer.convert_tokens_to_ids("</think>")
    paid = [i for i, b in enumerate(bonus) if b]
    assert paid == [len(ids0) + ids1.index(close_id)]  # turn 1's close only
    # without the flags (the old rule) both turns' first </think> are paid
    assert sum(anchor_token_bonus(ids, tokenizer, values, turns=spans)) == pytest.approx(0.2)
