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
    for i, t in enumerate(ids):
        assert bonus[i] == pytest.approx(by_id.get(t, 0.0))
    assert sum(bonus) == pytest.approx(2 * 0.1 + 0.05 + 0.02 + 2 * 0.03)
    # a zero value switches a tag off; defaults are the config's
    off = anchor_token_bonus(ids, tokenizer, {**values, "</think>": 0.0})
    assert sum(off) == pytest.approx(0.05 + 0.02 + 2 * 0.03)
    assert sum(anchor_token_bonus(ids, tokenizer)) == pytest.approx(
        2 * DEFAULT_TOKEN_ANCHOR_VALUES["</think>"] + DEFAULT_TOKEN_ANCHOR_VALUES["<answer>"]
        + DEFAULT_TOKEN_ANCHOR_VALUES["</answer>"] + 2 * DEFAULT_TOKEN_ANCHOR_VALUES["</tool_call>"]
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
