"""The ``hf`` backend with tiny real Qwen-VL models on real videos (CPU).

With random weights the text is noise, so the first turn's tool call comes from a pre-filled
prefix (``think_prefix`` is prompt text the turn continues): the episode then runs a real tool
round, a real forced turn with the window frames as images, and — for the sub-agent mode — a
batched sub-agent generate, all through ``model.generate``.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
from agent_helpers import call, small_config

from paravt.agent.engine import EpisodeEngine
from paravt.backends.hf import HFBackend, cut_at_stop, left_pad, mm_token_types
from paravt.schema.episodes import EpisodeInput

PREFIX = "<think>look</think>" + call(0, 3)


@pytest.fixture(scope="module")
def q3_backend(tiny_qwen3_dir):
    return HFBackend.from_pretrained(str(tiny_qwen3_dir), device="cpu", batch_size=4)


def test_batched_episodes_tool_round_and_teacher_forced_logprobs(q3_backend, pancake, bunny):
    q3_backend.logprobs = True
    cfg = small_config(max_turns=1, max_new_tokens=6, forced_tokens_mcq=5, think_prefix=PREFIX)
    inputs = [
        EpisodeInput("p", pancake, "What happens?", ["A cat", "A pan"]),
        EpisodeInput("b", bunny, "What animal?", ["A rabbit", "A dog"], frames_k=2),
    ]
    recs = EpisodeEngine(q3_backend, cfg).run(inputs)
    codec = q3_backend.codec
    for rec in recs:
        assert rec.status == "ok", rec.error
        assert len(rec.turns) == 2 and rec.turns[1].forced
        assert rec.calls[0].status == "ok" and rec.calls[0].n_frames >= 2
        assert [t.generated_tokens <= n for t, n in zip(rec.turns, (6, 5), strict=True)] == [
            True,
            True,
        ]
        assert len(rec.stream.images) == rec.frames_k + rec.calls[0].n_frames
        n_pad = sum(t == codec.image_token_id for t in rec.stream.token_ids)
        assert (
            rec.stream.pixel_values.shape[0]
            == int(rec.stream.image_grid_thw.prod(-1).sum())
            == 4 * n_pad
        )
        assert rec.timings.generate_s > 0 and rec.timings.decode_s > 0
    # the loss forward over the recorded stream reproduces generation's logprobs: tokens, images
    # and positions in the record are exactly what the model saw while generating
    model = q3_backend.model
    for rec in recs:  # the second episode was left-padded in the batch
        ids = torch.tensor([rec.stream.token_ids])
        mm = (ids == codec.image_token_id).to(torch.int32)
        with torch.no_grad():
            logits = (
                model(
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    mm_token_type_ids=mm,
                    pixel_values=rec.stream.pixel_values,
                    image_grid_thw=rec.stream.image_grid_thw,
                )
                .logits[0]
                .float()
            )
        lp = torch.log_softmax(logits[:-1], -1).gather(-1, ids[0, 1:, None]).squeeze(-1)
        mask = torch.tensor(rec.stream.loss_mask[1:], dtype=torch.bool)
        recorded = torch.tensor(rec.stream.logprobs[1:])[mask]
        assert mask.sum() == sum(t.generated_tokens for t in rec.turns)
        assert torch.allclose(lp[mask], recorded, atol=2e-3), (lp[mask] - recorded).abs().max()


def test_qwen25_subagent_mode(tiny_qwen25_dir, pancake):
    backend = HFBackend.from_pretrained(str(tiny_qwen25_dir), device="cpu")
    cfg = small_config(
        max_turns=1,
        max_new_tokens=4,
        forced_tokens_mcq=4,
        subagent_max_tokens=5,
        evidence="subagent",
        think_prefix=PREFIX,
    )
    [rec] = EpisodeEngine(backend, cfg).run([EpisodeInput("q", pancake, "What?", ["x", "y"])])
    assert rec.status == "ok", rec.error
    [sub] = rec.subagents
    assert sub.status == "ok" and 0 < sum(sub.stream.loss_mask) <= 5
    assert sub.stream.pixel_values.shape[0] == int(sub.stream.image_grid_thw.prod(-1).sum())
    assert rec.calls[0].summary is not None
    tool_msg = next(m for m in rec.messages if m["role"] == "tool")
    assert tool_msg["content"][-1]["text"].startswith("Summary of 0.0s to 3.0s:")
    assert all(im.source == "overview" for im in rec.stream.images)


def test_left_pad_aligns_prompt_ends_and_marks_only_real_vision_tokens():
    image, video, pad = 7, 8, 0
    ids, mask = left_pad([[1, image, image, 2], [video, 3]], pad)
    assert ids.tolist() == [[1, image, image, 2], [pad, pad, video, 3]]
    assert mask.tolist() == [[1, 1, 1, 1], [0, 0, 1, 1]]
    mm = mm_token_types(ids, mask, image_token_id=image, video_token_id=video)
    assert mm.tolist() == [[0, 1, 1, 0], [0, 0, 2, 0]]
    # a pad id equal to a vision id (possible in odd tokenizers) is still text where masked
    ids, mask = left_pad([[image], [image, image]], image)
    assert mm_token_types(ids, mask, image, video).tolist() == [[0, 1], [1, 1]]


def test_cut_at_stop_keeps_the_first_stop_token_or_the_whole_row():
    assert cut_at_stop([5, 6, 9, 7, 9], {9}) == ([5, 6, 9], "stop")
    assert cut_at_stop([5, 6, 7], {9, 10}) == ([5, 6, 7], "length")
    assert cut_at_stop([10], {9, 10}) == ([10], "stop")


def test_episodes_of_one_video_share_one_overview_copy_and_one_encoding(tiny_qwen3_dir, pancake):
    """A batch of episodes on one video: no per-episode copy of the overview rows, the vision
    tower encodes each distinct frame once, and the tokens are those of the joined-pixels path."""
    backend = HFBackend.from_pretrained(str(tiny_qwen3_dir), device="cpu", batch_size=4)
    backend.logprobs = True
    assert backend.reads_image_pixels
    cfg = small_config(max_turns=1, max_new_tokens=4, forced_tokens_mcq=3, think_prefix=PREFIX)
    inputs = [EpisodeInput(f"q{i}", pancake, f"Question {i}?", ["x", "y"]) for i in range(3)]
    seen = []
    original = backend._batch

    def spy(reqs):
        seen.append(reqs)
        return original(reqs)

    backend._batch = spy
    shared_recs = EpisodeEngine(backend, cfg).run(inputs)
    turn0 = seen[0]
    assert all(r.tokens.pixel_values is None for r in turn0)  # nothing joined per episode
    rows = {it.pixels.data_ptr() for r in turn0 for it in r.images}
    assert len(rows) == cfg.frames  # the 3 episodes hold the same K overview rows
    # the records hold no joined copy: their images share the one overview tensor, and
    # rec.stream.pixel_values joins the rows only when read
    first_rows = shared_recs[0].stream.images[0].pixels
    for rec in shared_recs:
        assert rec.stream._pixel_values is None
        assert rec.stream.images[0].pixels.data_ptr() == first_rows.data_ptr()
        assert rec.stream.pixel_values.shape[0] == int(rec.stream.image_grid_thw.prod(-1).sum())
    # turn 1 (overview + each episode's window of 0-3 s): the same window frames are one image,
    # preprocessed once for the three episodes; the kept states cover the overview, so only
    # the window is encoded (engine.reuse_cache; without it, the overview again too)
    n_window = shared_recs[0].calls[0].n_frames
    assert backend.last_distinct_images == n_window
    full = EpisodeEngine(backend, dataclasses.replace(cfg, reuse_cache=False)).run(inputs)
    assert backend.last_distinct_images == cfg.frames + n_window
    assert [r.stream.token_ids for r in full] == [r.stream.token_ids for r in shared_recs]
    tool_rows = [
        [it.pixels for it in rec.stream.images if it.source == "tool"] for rec in shared_recs
    ]
    assert tool_rows[0] and all(
        [p.data_ptr() for p in rows] == [p.data_ptr() for p in tool_rows[0]] for rows in tool_rows
    )

    backend.reads_image_pixels = False  # the joined-pixels path: one copy per episode
    backend._batch = original
    joined_recs = EpisodeEngine(backend, cfg).run(inputs)
    for a, b in zip(shared_recs, joined_recs, strict=True):
        assert a.stream.token_ids == b.stream.token_ids
        assert torch.allclose(
            torch.tensor(a.stream.logprobs), torch.tensor(b.stream.logprobs), atol=1e-4
        )

    # infer and eval (keep_pixels=False): the same episodes, and the finished records let go of
    # every preprocessed row (~0.9 GB an episode at K = 64), keeping the frames and the grid
    lean = EpisodeEngine(backend, cfg, keep_pixels=False).run(inputs)
    for a, b in zip(shared_recs, lean, strict=True):
        assert a.stream.token_ids == b.stream.token_ids and b.stream.pixel_values is None
        assert all(it.pixels is None and it.data is not None for it in b.stream.images)
        assert torch.equal(a.stream.image_grid_thw, b.stream.image_grid_thw)


def test_overview_rows_join_as_a_view_and_tool_rows_as_a_copy():
    from paravt.schema.episodes import ImageItem, join_rows

    base = torch.arange(40.0).reshape(10, 4)
    items = [ImageItem(torch.zeros(3, 2, 2), float(i), "overview", 1, 1) for i in range(5)]
    for i, it in enumerate(items):
        it.pixels = base[2 * i : 2 * i + 2]
    view = join_rows(items[1:4])
    assert view.data_ptr() == base[2].data_ptr() and torch.equal(view, base[2:8])
    tool = ImageItem(torch.zeros(3, 2, 2), 9.0, "tool", 1, 1)
    tool.pixels = torch.ones(2, 4)
    joined = join_rows(items + [tool])
    assert joined.shape == (12, 4) and torch.equal(joined[:10], base)
    out_of_order = join_rows([items[2], items[0]])
    assert torch.equal(out_of_order, torch.cat([base[4:6], base[0:2]]))
