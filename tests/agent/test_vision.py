"""Frames → pixel_values: the kernels path and the processor fallback agree on layout."""

from __future__ import annotations

import itertools
import threading

import torch

from paravt.agent import vision
from paravt.agent.chat import ChatCodec
from paravt.schema.episodes import ImageItem
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

    from paravt.agent.engine import EpisodeEngine
    from paravt.backends.scripted import ScriptedBackend
    from paravt.schema.episodes import EpisodeInput

    backend = ScriptedBackend([call(0, 3), "<answer>A</answer>"], processor=q3_processor)
    backend.pixel_dtype = torch.bfloat16  # what HFBackend sets from its model
    [rec] = EpisodeEngine(backend, small_config()).run(
        [EpisodeInput("d", pancake, "Q?", ["a", "b"])]
    )
    assert rec.stream.pixel_values.dtype == torch.bfloat16
    assert all(r.tokens.pixel_values.dtype == torch.bfloat16 for b in backend.batches for r in b)


_REAL_KERNELS = vision._kernels_pixel_values  # unwatched, however many spies a test sets


def _spy_threads(monkeypatch) -> set[int]:
    """The threads the kernels run on from now on (the real kernels, watched).

    The first two calls meet at a barrier before they run, so two of them must be in flight at
    once: on a busy machine one pool thread could otherwise take every piece in turn, and a
    serial path times the barrier out (``BrokenBarrierError``) instead of passing."""
    real, seen = _REAL_KERNELS(), set()
    gate, calls = threading.Barrier(2, timeout=30), itertools.count()

    def kernel(*args, **kwargs):
        seen.add(threading.get_ident())
        if next(calls) < 2:
            gate.wait()
        return real(*args, **kwargs)

    monkeypatch.setattr(vision, "_kernels_pixel_values", lambda: kernel)
    return seen


def test_threaded_preprocess_gives_the_serial_pixels(q3_processor, pancake, monkeypatch):
    codec = ChatCodec(q3_processor)
    with VideoSource(pancake) as src:
        frames = src.overview(7)
    pairs = zip(frames.data, frames.times, strict=True)
    items = [ImageItem(f, t, "overview", 784, 50176) for f, t in pairs]
    crop = frames.data[:, :, :120, :200]  # a window of another size and budget: a second run
    items += [ImageItem(f, 0.0, "tool", 784, 4096) for f in crop]
    serial_pv, serial_grid = vision.preprocess(items, codec, workers=1)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)  # OMP_NUM_THREADS=1, as on CPU
    for workers in (2, 3, 16):
        seen = _spy_threads(monkeypatch)  # a fresh barrier: each run's first two pieces meet
        pv, grid = vision.preprocess(items, codec, workers=workers)
        assert len(seen) > 1, "the pieces did not run on several threads"
        assert torch.equal(pv, serial_pv) and torch.equal(grid, serial_grid), workers
    pv16, _ = vision.preprocess(items, codec, dtype=torch.bfloat16, workers=3)
    assert torch.equal(pv16, serial_pv.to(torch.bfloat16))


def test_preprocess_lanes_share_the_cores_with_torchs_own_threads(monkeypatch):
    import os

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(6)), raising=False)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert [vision.preprocess_lanes(w) for w in (0, 1, 4)] == [6, 1, 4]
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    assert [vision.preprocess_lanes(w) for w in (0, 1, 4, 3)] == [3, 1, 2, 1]
    monkeypatch.setattr(torch, "get_num_threads", lambda: 6)  # torch's default: one per core
    assert vision.preprocess_lanes(0) == 1


def test_the_engine_resizes_on_its_crop_workers_with_the_serial_pixels(
    q3_processor, pancake, monkeypatch
):
    from agent_helpers import call, small_config

    from paravt.agent.config import CropSettings
    from paravt.agent.engine import EpisodeEngine
    from paravt.backends.scripted import ScriptedBackend
    from paravt.schema.episodes import EpisodeInput

    def run(workers: int):
        crop = CropSettings(min_pixels=784, max_pixels=4096, max_frames=4, workers=workers)
        script = [call(0, 3) + call(4, 8), "<answer>A</answer>"]
        backend = ScriptedBackend(script, processor=q3_processor)
        [rec] = EpisodeEngine(backend, small_config(crop=crop)).run(
            [EpisodeInput("d", pancake, "Q?", ["a", "b"])]
        )
        assert rec.status == "ok", rec.error
        return rec, [r.tokens.pixel_values for b in backend.batches for r in b]

    serial, serial_rows = run(1)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    seen = _spy_threads(monkeypatch)
    threaded, threaded_rows = run(2)
    assert len(seen) > 1
    assert torch.equal(threaded.stream.pixel_values, serial.stream.pixel_values)
    assert len(threaded_rows) == len(serial_rows) == 2
    assert all(torch.equal(a, b) for a, b in zip(threaded_rows, serial_rows, strict=True))


def test_frames_at_their_budget_give_the_same_rows_byte_for_byte(q3_processor, pancake):
    """``at_budget`` resizes with the kernels' own CPU resize, so ``preprocess`` of the small
    frames skips its resize and writes exactly the rows of the decoded frames (two budgets, and
    a frame the budget leaves at its size)."""
    codec = ChatCodec(q3_processor)
    with VideoSource(pancake) as src:
        frames = src.overview(5)
    parts = [frames.frame(i) for i in range(len(frames))]
    for lo, hi in ((784, 4096), (784, 50176)):
        small = vision.at_budget(parts, codec.arch, lo, hi, workers=2)
        assert all(s.shape[1] * s.shape[2] <= hi for s in small)
        assert all(s.shape != p.shape for s, p in zip(small, parts, strict=True))

        def items(data, lo=lo, hi=hi):
            out = [ImageItem(d, 0.0, "overview", lo, hi) for d in data]
            for it in out:
                it.grid_thw = codec.grid_for(it.data.shape[1], it.data.shape[2], lo, hi)
            return out

        pv_full, grid_full = vision.preprocess(items(parts), codec)
        pv_small, grid_small = vision.preprocess(items(small), codec)
        assert grid_full.tolist() == grid_small.tolist()
        assert torch.equal(pv_full, pv_small)
    same = vision.at_budget(small, codec.arch, 784, 50176)
    assert all(a is b for a, b in zip(same, small, strict=True))


def test_engine_keeps_frames_at_budget_and_drops_subagent_frames(
    q3_processor, pancake, monkeypatch
):
    """The training engine's host-memory options: the same token streams and pixel rows, frames
    decoded straight to the budget size (the decode outcomes and the ``Frames`` of the overview
    and of every window hold no full-size frame), and sub-agent window frames let go once
    summarised."""
    from agent_helpers import call, small_config

    from paravt.agent.engine import EpisodeEngine
    from paravt.backends.scripted import ScriptedBackend
    from paravt.schema.episodes import EpisodeInput

    held: list[list[tuple[int, ...]]] = []  # per assembled Frames: its outcome's frames' shapes
    assemble = VideoSource.assemble

    def spy(self, plan, outcome):
        frames = assemble(self, plan, outcome)
        shapes = [tuple(d.shape) for d, _ in outcome.frames.values()]
        held.append(shapes + [tuple(p.shape) for p in frames.parts])
        return frames

    monkeypatch.setattr(VideoSource, "assemble", spy)

    def run(**kw):
        held.clear()
        script = [call(0, 3) + call(2, 5), "<answer>A</answer>"]
        backend = ScriptedBackend(script, processor=q3_processor, subagent="a pan")
        cfg = small_config(evidence="subagent")
        [rec] = EpisodeEngine(backend, cfg, **kw).run(
            [EpisodeInput("d", pancake, "Q?", ["a", "b"])]
        )
        return rec, list(held)

    before, held_before = run()
    after, held_after = run(frames_at_budget=True, keep_subagent_frames=False)
    assert len(held_after) == len(held_before) == 3  # the overview and two windows
    assert all(shape == (3, 240, 426) for shapes in held_before for shape in shapes)
    assert all(s[1] * s[2] <= 4096 for shapes in held_after for s in shapes)
    assert after.stream.token_ids == before.stream.token_ids
    assert torch.equal(after.stream.pixel_values, before.stream.pixel_values)
    assert all(
        a.data.numel() < b.data.numel()
        for a, b in zip(after.stream.images, before.stream.images, strict=True)
    )
    assert all(a.data.shape[1] * a.data.shape[2] <= 4096 for a in after.stream.images)
    assert len(after.subagents) == len(before.subagents) == 2
    assert all(s.stream.images for s in before.subagents)
    assert all(not s.stream.images and s.prediction for s in after.subagents)


def test_frames_resized_on_the_decode_lanes_give_the_same_rows_byte_for_byte(
    q3_processor, pancake, odd_size_video
):
    """``budget_resizer`` applied by the decode lanes (overview and crop_video windows) gives the
    frames ``at_budget`` makes from the full-size decode, and ``preprocess`` of either writes the
    rows of the full-size frames, byte for byte (426x240 and 330x186: sizes the rule changes)."""
    from paravt.tools.batch import execute_windows
    from paravt.tools.results import CropConfig, WindowRequest

    codec = ChatCodec(q3_processor)
    for video, (lo, hi) in itertools.product((pancake, str(odd_size_video)), _BUDGETS):
        to_budget = vision.budget_resizer(codec.arch, lo, hi)
        reqs = [WindowRequest(video, {"start_time": 1.0, "end_time": 6.5}, key=0)]
        crop = CropConfig(workers=2, fps=2.0, max_frames=8)
        with VideoSource(video) as src:
            size = to_budget.target(src.meta.height, src.meta.width)
            assert size is not None and size != (src.meta.height, src.meta.width)
            full = src.overview(12, workers=3)
            lane = src.overview(12, workers=3, resize=to_budget)
            [win_full] = execute_windows(reqs, crop, sources={video: src}).results
            [win_lane] = execute_windows(reqs, crop, sources={video: src}, resize=to_budget).results
        for a, b in ((full, lane), (win_full.clip, win_lane.clip)):
            assert a.times == b.times and len(b) > 4
            assert all(tuple(p.shape) == (3, *size) for p in b.parts)
            resized = vision.at_budget(a.parts, codec.arch, lo, hi, workers=2)
            assert all(torch.equal(x, y) for x, y in zip(resized, b.parts, strict=True))
            pv_full, grid_full = vision.preprocess(_items(codec, a.parts, lo, hi), codec)
            pv_lane, grid_lane = vision.preprocess(_items(codec, b.parts, lo, hi), codec)
            assert grid_full.tolist() == grid_lane.tolist()
            assert torch.equal(pv_full, pv_lane)


_BUDGETS = ((784, 4096), (784, 50176))


def _items(codec: ChatCodec, parts: list, lo: int, hi: int) -> list[ImageItem]:
    out = [ImageItem(p, 0.0, "overview", lo, hi) for p in parts]
    for it in out:
        it.grid_thw = codec.grid_for(it.data.shape[1], it.data.shape[2], lo, hi)
    return out
