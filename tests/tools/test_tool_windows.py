"""Batched crop_video execution on real decodes: sampling, order, de-duplication, isolation."""

from __future__ import annotations

from itertools import pairwise

import pytest
import torch

from paravt.tools import TOOL_SCHEMA, CropConfig, WindowRequest, execute_windows
from paravt.video import VideoSource
from paravt.video.sampling import window_frame_count


@pytest.mark.parametrize(
    "length, n", [(10, 10), (15.03, 14), (20, 16), (30, 16), (1, 2), (2.5, 2), (0.2, 2), (7, 6)]
)
def test_window_frame_count_follows_the_protocol(length, n):
    assert window_frame_count(length, 1.0, 2, 16) == n


def test_schema_names_the_three_required_arguments():
    fn = TOOL_SCHEMA["function"]
    assert fn["name"] == "crop_video"
    assert fn["parameters"]["required"] == ["video_path", "start_time", "end_time"]


def _check_window(result, src: VideoSource):
    assert result.ok, result.error
    n = len(result.times)
    assert result.frames.shape[0] == n and result.frames.dtype == torch.uint8
    assert all(b > a for a, b in pairwise(result.times))
    slice_ = (result.end - result.start) / n
    for j, t in enumerate(result.times):  # the frame on screen at slice centre j
        centre = result.start + (j + 0.5) * slice_
        i = src.index_at(centre)
        assert t == pytest.approx(src.time_of(i))
        assert result.start - 1e-9 <= centre and t <= centre < t + src.table.durations[i]


def test_windows_are_sampled_time_uniformly_with_true_times(gop_video):
    src = VideoSource(gop_video)
    windows = [(0, 10), (2.5, 4), ("00:03", "0:11.5"), (11, 12)]
    reqs = [
        WindowRequest(str(gop_video), {"start_time": s, "end_time": e}, key=k)
        for k, (s, e) in enumerate(windows)
    ]
    batch = execute_windows(reqs, CropConfig(workers=2))
    counts = [len(r.times) for r in batch.results]
    assert counts == [10, 2, 8, 2]
    assert [r.key for r in batch.results] == [0, 1, 2, 3]
    for r in batch.results:
        _check_window(r, src)
    assert batch.results[0].message() == "10 frames from 0.0s to 10.0s."
    assert batch.stats.opens == {str(gop_video): 1}
    assert batch.stats.decoders[str(gop_video)] <= 2


def test_mm_ss_windows_on_a_two_minute_video(minutes_video):
    reqs = [
        WindowRequest(str(minutes_video), {"start_time": "01:30", "end_time": "01:45"}),
        WindowRequest(str(minutes_video), {"start": "0:00:50", "end": "1:00"}),
    ]
    batch = execute_windows(reqs, CropConfig(workers=1))
    a, b = batch.results
    assert (a.start, a.end, len(a.times)) == (90.0, 105.0, 14)
    assert (b.start, b.end, len(b.times)) == (50.0, 60.0, 10)
    assert 90.0 <= a.times[0] and a.times[-1] < 105.0


def test_a_training_shaped_batch_decodes_each_frame_once_and_shares_tensors(gop_video):
    distinct = [(0, 4), (2, 6), (5, 9), (1, 11), (8, 12), (0, 12)]
    calls = [distinct[(g * 3 + c) % 6] for g in range(8) for c in range(3)]
    reqs = [WindowRequest(str(gop_video), {"start_time": s, "end_time": e}) for s, e in calls]
    batch = execute_windows(reqs, CropConfig(workers=2))
    st = batch.stats
    assert st.calls == st.calls_ok == 24 and st.opens == {str(gop_video): 1}
    assert st.frames_returned == sum(len(r.times) for r in batch.results)
    assert st.distinct_frames == st.frames_decoded < st.frames_returned
    same = [r for r, c in zip(batch.results, calls, strict=True) if c == (0, 4)]
    assert len(same) >= 2 and all(r.frames is same[0].frames for r in same)


def test_worker_count_does_not_change_the_frames(gop_video):
    reqs = [
        WindowRequest(str(gop_video), {"start_time": s, "end_time": s + 3.3})
        for s in (0, 2, 4.4, 7, 8.5)
    ]
    one = execute_windows(reqs, CropConfig(workers=1))
    three = execute_windows(reqs, CropConfig(workers=3))
    assert three.stats.lanes > 1 and one.stats.lanes == 1
    for a, b in zip(one.results, three.results, strict=True):
        assert a.times == b.times and torch.equal(a.frames, b.frames)
    src = VideoSource(gop_video)
    direct = src.frames_at([0 + (j + 0.5) * 3.3 / 2 for j in range(2)])
    assert torch.equal(direct.data, one.results[0].frames)


def test_failing_calls_never_fail_their_siblings(gop_video, bad_files, video_path):
    corrupt = str(video_path("decord__corrupted.mp4"))
    good = str(gop_video)
    reqs = [
        WindowRequest(good, {"start_time": 1, "end_time": 3}, key="ok1"),
        WindowRequest(good, {"start_time": "NaN", "end_time": 3}, key="nan"),
        WindowRequest(str(bad_files["missing"]), {"start_time": 1, "end_time": 3}, key="missing"),
        WindowRequest(str(bad_files["text"]), {"start_time": 1, "end_time": 3}, key="text"),
        WindowRequest(good, {"start_time": 8, "end_time": 2}, key="reversed"),
        WindowRequest(good, {"start_time": 50, "end_time": 60}, key="beyond"),
        WindowRequest(corrupt, {"start_time": 2, "end_time": 4}, key="corrupt"),
        WindowRequest(corrupt, {"start_time": 0, "end_time": 2}, key="corrupt-clean"),
        WindowRequest(good, {"start_time": 4, "end_time": 6}, key="ok2"),
    ]
    out = {r.key: r for r in execute_windows(reqs, CropConfig(workers=2)).results}
    assert [r.key for r in execute_windows(reqs, CropConfig(workers=1)).results] == [
        q.key for q in reqs
    ]
    assert out["ok1"].ok and out["ok2"].ok and out["corrupt-clean"].ok
    assert out["nan"].error_kind == "invalid_window" and "start_time='NaN'" in out["nan"].message()
    assert out["missing"].error_kind == "open" and "not found" in out["missing"].message()
    assert out["text"].error_kind == "open" and "cannot open" in out["text"].message()
    assert (
        out["reversed"].error_kind == "invalid_window" and "not before" in out["reversed"].message()
    )
    assert (
        out["beyond"].error_kind == "invalid_window" and "after the end" in out["beyond"].message()
    )
    c = out["corrupt"]  # frame 28 of the corrupt file is in this window
    assert c.ok or c.error_kind == "decode"
    if c.ok:
        assert len(c.times) >= 1 and all(2 <= t <= 4 for t in c.times)


def test_corrupt_region_is_reported_per_call(video_path):
    """A window that needs exactly the broken frame: a typed error or a partial result, never silence."""
    corrupt = str(video_path("decord__corrupted.mp4"))
    batch = execute_windows(
        [WindowRequest(corrupt, {"start_time": 2.8, "end_time": 2.9})], CropConfig(workers=1)
    )
    r = batch.results[0]
    if r.ok:
        assert len(r.times) >= 1 and (r.failed or r.warnings)
    else:
        assert r.error_kind == "decode" and "corrupt" in r.error


def test_many_videos_in_one_batch_each_opened_once(gop_video, minutes_video):
    a, b = str(gop_video), str(minutes_video)
    plan = [(a, 0, 5), (b, 30, 50), (a, 3, 9), (b, "1:00", "1:20"), (a, 0, 5), (b, 100, 119)]
    reqs = [
        WindowRequest(v, {"start_time": s, "end_time": e}, key=n)
        for n, (v, s, e) in enumerate(plan)
    ]
    batch = execute_windows(reqs, CropConfig(workers=2))
    assert [r.key for r in batch.results] == list(range(6))
    assert [r.video for r in batch.results] == [v for v, _, _ in plan]
    assert all(r.ok for r in batch.results)
    assert batch.stats.opens == {a: 1, b: 1}
    assert all(1 <= n <= 2 for n in batch.stats.decoders.values())
    assert [len(r.times) for r in batch.results] == [4, 16, 6, 16, 4, 16]
