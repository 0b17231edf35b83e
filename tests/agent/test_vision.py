"""Frames → pixel_values: the kernels path and the processor fallback agree on layout."""

from __future__ import annotations

import torch

from paravt.agent import vision
from paravt.agent.chat import ChatCodec
from paravt.agent.records import ImageItem
from paravt.video import VideoSource


def test_processor_fallback_matches_the_kernels_layout(q3_processor, pancake, monkeypatch):
    codec = ChatCodec(q3_processor)
    with VideoSource(pancake) as src:
        frames = src.overview(3)
    items = [
        ImageItem(f, t, "overview", 784, 4096)
        for f, t in zip(frames.data, frames.times, strict=True)
    ]
    items.append(ImageItem(frames.data[0][:, :100, :150].contiguous(), 0.0, "tool", 784, 2048))
    for it in items:
        it.grid_thw = codec.grid_for(
            it.data.shape[1], it.data.shape[2], it.min_pixels, it.max_pixels
        )
    pv_k, grid_k = vision.preprocess(items, codec)
    monkeypatch.setattr(vision, "_kernels_pixel_values", lambda: None)
    pv_p, grid_p = vision.preprocess(items, codec)
    assert grid_k.tolist() == grid_p.tolist() == [list(it.grid_thw) for it in items]
    assert pv_k.shape == pv_p.shape == (int(grid_k.prod(-1).sum()), 3 * 2 * 16 * 16)
    # same frames, same normalisation: the two resizers differ only in rounding and filter detail
    assert torch.corrcoef(torch.stack([pv_k.flatten(), pv_p.flatten()]))[0, 1] > 0.95


def test_engine_builds_pixel_values_in_the_backends_dtype(q3_processor, pancake):
    from agent_helpers import call, small_config

    from paravt.agent.backends.scripted import ScriptedBackend
    from paravt.agent.engine import EpisodeEngine
    from paravt.agent.records import EpisodeInput

    backend = ScriptedBackend([call(0, 3), "<answer>A</answer>"], processor=q3_processor)
    backend.pixel_dtype = torch.bfloat16  # what HFBackend sets from its model
    [rec] = EpisodeEngine(backend, small_config()).run(
        [EpisodeInput("d", pancake, "Q?", ["a", "b"])]
    )
    assert rec.pixel_values.dtype == torch.bfloat16
    assert all(r.pixel_values.dtype == torch.bfloat16 for b in backend.batches for r in b)
