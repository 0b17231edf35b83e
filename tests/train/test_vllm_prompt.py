"""The vLLM prompt of a stream: image-pad runs collapsed for vLLM, and the read-back check."""

from __future__ import annotations

import pytest

from paravt.rollout.vllm_prompt import (
    VLLMPromptMismatchError,
    check_reported_prompt,
    collapse_image_pads,
    expand_image_pads,
    image_pad_runs,
)

PAD, START, END = 9, 7, 8


def _frame(n: int) -> list[int]:
    return [START] + [PAD] * n + [END]


def test_collapse_keeps_one_pad_per_frame_and_expand_inverts_it():
    stream = [1, 2, *_frame(4), 3, *_frame(1), *_frame(6), 5]
    collapsed = collapse_image_pads(stream, PAD)
    assert collapsed == [1, 2, *_frame(1), 3, *_frame(1), *_frame(1), 5]
    assert image_pad_runs(stream, PAD) == [4, 1, 6]
    assert image_pad_runs(collapsed, PAD) == [1, 1, 1]
    assert expand_image_pads(collapsed, PAD, [4, 1, 6]) == stream
    # text-only streams, pads at either end, and an empty stream
    assert collapse_image_pads([1, 2, 3], PAD) == [1, 2, 3]
    assert collapse_image_pads([PAD, PAD, 1, PAD], PAD) == [PAD, 1, PAD]
    assert image_pad_runs([PAD, PAD, 1, PAD], PAD) == [2, 1]
    assert collapse_image_pads([], PAD) == [] and image_pad_runs([], PAD) == []
    with pytest.raises(ValueError, match="2 image-pad runs but 1 lengths"):
        expand_image_pads([PAD, 1, PAD], PAD, [3])


def test_reported_prompt_must_be_the_stream():
    stream = [1, *_frame(4), 2, *_frame(2), 3]
    check_reported_prompt(stream, list(stream), PAD, episode="e0", turn=2, sent_collapsed=True)
    check_reported_prompt(stream, None, PAD, episode="e0", turn=2, sent_collapsed=True)
    # what vLLM makes of the expanded stream when it expands every pad again (4 features each)
    doubled = [t for tok in stream for t in ([PAD] * 4 if tok == PAD else [tok])]
    with pytest.raises(VLLMPromptMismatchError) as err:
        check_reported_prompt(stream, doubled, PAD, episode="q17", turn=2, sent_collapsed=False)
    msg = str(err.value)
    assert "episode q17 turn 2" in msg
    assert "6 image pads in 2 runs" in msg and "24 image pads in 2 runs" in msg
    assert "first difference at token 6" in msg and "image pads expanded" in msg
    # a frame resized by vLLM: same runs, other lengths
    with pytest.raises(VLLMPromptMismatchError, match="one image pad per frame"):
        check_reported_prompt(
            stream,
            expand_image_pads(collapse_image_pads(stream, PAD), PAD, [4, 3]),
            PAD,
            episode="q1",
            turn=1,
            sent_collapsed=True,
        )
