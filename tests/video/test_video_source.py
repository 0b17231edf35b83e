"""VideoSource on the real shared files and generated videos: times, oracles, modes."""

from __future__ import annotations

from itertools import pairwise

import media
import pytest
import torch
from torchcodec.decoders import VideoDecoder

from paravt.video import VideoSource

#: the real kinds that decode whole (the damaged one has tests of its own)
REAL = [name for name in media.STAND_INS if name != "decord__corrupted.mp4"]
MODES = ["exact", "keyframe", "qwen-vl-utils"]


@pytest.mark.parametrize("name", REAL)
def test_metadata_matches_the_decoder(video_path, name):
    path = video_path(name)
    src = VideoSource(path)
    md = VideoDecoder(str(path)).metadata
    m = src.meta
    assert m.num_frames == md.num_frames
    assert m.duration == pytest.approx(md.duration_seconds, abs=1e-6)
    assert m.average_fps == pytest.approx(md.average_fps, rel=1e-6)
    assert (m.width, m.height) == (md.width, md.height)
    assert m.begin == pytest.approx(0.0) and m.end == pytest.approx(m.duration)
    assert m.codec == md.codec and m.num_keyframes >= 1


@pytest.mark.parametrize("name", REAL)
@pytest.mark.parametrize("mode", MODES)
def test_overview_times_strictly_increasing_inside_the_video(video_path, name, mode):
    src = VideoSource(video_path(name))
    frames = src.overview(16, mode=mode)
    assert len(frames) > 0 and not frames.failed
    assert frames.data.dtype == torch.uint8
    assert tuple(frames.data.shape) == (len(frames), 3, src.meta.height, src.meta.width)
    assert all(b > a for a, b in pairwise(frames.times))
    assert 0.0 <= frames.times[0] and frames.times[-1] <= src.meta.duration
    # the reported times are the decoded frames' own pts
    assert frames.times == [src.time_of(i) for i in frames.indices]


def test_testsrc2_frame_at_t_is_the_frame_whose_pts_covers_t(video_path):
    """Oracle: a plain sequential decode of all 60 frames (frame k is shown on [k/30, (k+1)/30))."""
    path = video_path("torchcodec__testsrc2.mp4")
    every = VideoDecoder(str(path)).get_frames_in_range(0, 60)
    src = VideoSource(path)
    probes = [0.0, 0.01, 1 / 30 - 1e-4, 1 / 30 + 1e-4, 0.5, 0.9999, 1.0, 1.0334, 1.5, 1.98, 1.9999]
    for t in probes:
        f = src.frames_at([t])
        k = int(t * 30 + 1e-9)
        assert len(f) == 1
        assert f.times[0] <= t < f.times[0] + 1 / 30 + 1e-9
        assert f.times[0] == pytest.approx(float(every.pts_seconds[k]))
        assert torch.equal(f.data[0], every.data[k]), f"t={t}: expected frame {k}"


def test_var_fps_exact_overview_is_time_uniform(video_path):
    src = VideoSource(video_path("torchcodec__var_fps_video.mp4"))
    k = 16
    plan, _ = src.overview_plan(k, "exact")
    asked = [t for t, _ in plan]
    slice_ = src.meta.duration / k
    assert [b - a for a, b in pairwise(asked)] == pytest.approx([slice_] * (k - 1))
    frames = src.overview(k, "exact")
    table = src.table
    for t, i in plan:  # each sampled frame is the one on screen at its slice centre
        assert table.pts[i] <= t < table.pts[i] + table.durations[i]
    # index-uniform sampling is not time-uniform on this file
    qwen = src.overview(k, "qwen-vl-utils").times
    gaps = [b - a for a, b in pairwise(qwen)]
    assert max(gaps) - min(gaps) > 0.5
    assert len(frames) == k


@pytest.mark.parametrize(
    "name", ["torchcodec__var_fps_video.mp4", "decord__flipping_a_pancake.mkv"]
)
@pytest.mark.parametrize("k", [4, 15, 64])
def test_compat_mode_reproduces_qwen_vl_utils_indices(video_path, name, k):
    from qwen_vl_utils.vision_process import fetch_video

    path = video_path(name)
    _, meta = fetch_video(
        {"video": str(path), "nframes": k, "min_pixels": 784, "max_pixels": 784 * 4},
        return_video_metadata=True,
    )
    src = VideoSource(path)
    frames = src.overview(k, "qwen-vl-utils")
    assert frames.indices == list(meta["frames_indices"])
    raw = VideoDecoder(str(path)).get_frames_at(list(meta["frames_indices"])).data
    assert torch.equal(frames.data, raw)


def test_keyframe_mode_decodes_keyframes_and_reports_their_times(gop_video):
    src = VideoSource(gop_video)
    k = 12
    frames = src.overview(k, "keyframe")
    assert set(frames.indices) <= set(src.table.keyframes)
    assert len(frames) == k
    centres = [t for t, _ in src.overview_plan(k, "exact")[0]]
    half = src.meta.duration / (2 * k)
    for c, t in zip(centres, frames.times, strict=True):
        assert abs(t - c) <= half + 1e-9
    assert not frames.warnings  # every slice had a keyframe near its centre


def test_keyframe_mode_falls_back_to_exact_frames_when_keyframes_are_sparse(video_path):
    src = VideoSource(video_path("torchcodec__testsrc2.mp4"))  # one keyframe in 60 frames
    frames = src.overview(8, "keyframe")
    assert len(frames) == 8
    assert any("keyframe mode" in w for w in frames.warnings)


def test_overview_on_a_video_with_fewer_frames_than_asked(video_path):
    src = VideoSource(video_path("torchcodec__h265_video.mp4"))  # 10 frames
    frames = src.overview(64, "exact")
    assert len(frames) == 10
    assert any("distinct frames" in w for w in frames.warnings)
    compat = src.overview(64, "qwen-vl-utils")
    assert compat.indices == list(range(10))
    assert any("qwen-vl-utils mode" in w for w in compat.warnings)


def test_corrupted_file_gives_partial_frames_that_say_what_failed(video_path):
    """Frame 28 of 50 has an invalid NAL unit: every other frame is still returned."""
    src = VideoSource(video_path("decord__corrupted.mp4"))
    frames = src.overview(16, "exact")  # does not touch frame 28
    assert len(frames) == 16 and all(b > a for a, b in pairwise(frames.times))
    every = src.frames_at([(i + 0.5) / 10 for i in range(50)])
    assert 45 <= len(every) < 50
    assert every.failed and all(0 <= t <= src.meta.duration for t in every.failed)
    assert any("could not be decoded" in w for w in every.warnings)
    assert all(b > a for a, b in pairwise(every.times))
    assert every.data.shape[0] == len(every.times)


def test_frames_at_clamps_times_outside_the_video(gop_video):
    src = VideoSource(gop_video)
    f = src.frames_at([-3.0, 1e9])
    assert f.times[0] == 0.0 and f.times[-1] == pytest.approx(src.time_of(src.meta.num_frames - 1))
    assert any("clamped" in w for w in f.warnings)


def test_overview_rejects_bad_arguments(gop_video):
    src = VideoSource(gop_video)
    with pytest.raises(ValueError, match="mode"):
        src.overview(8, mode="fast")
    with pytest.raises(ValueError, match="k >= 1"):
        src.overview(0)


def test_truncated_faststart_file_gives_what_is_there(bad_files):
    """The index survives but only ~60% of the data does: the real (shorter) duration is used,
    frames before the cut decode, and a frame at the cut is either returned or listed as failed."""
    src = VideoSource(bad_files["truncated_faststart"])
    assert src.meta.duration < 5.0
    assert any("truncated" in w for w in src.open_warnings)
    frames = src.frames_at([0.5, 2.0, 5.5])
    assert frames.times[:2] == pytest.approx([0.48, 2.0])
    assert len(frames) + len(frames.failed) == 3
    assert all(0 <= t <= src.meta.duration for t in frames.times + frames.failed)


@pytest.mark.gpu
def test_cuda_decoding_returns_frames_on_the_gpu(video_path):
    src = VideoSource(video_path("torchcodec__testsrc2.mp4"), device="cuda")
    frames = src.overview(4)
    assert frames.data.is_cuda and len(frames) == 4


@pytest.mark.parametrize("mode", ["exact", "keyframe"])
def test_parallel_overview_gives_the_same_frames(gop_video, mode):
    src = VideoSource(gop_video)
    one = src.overview(10, mode)
    two = src.overview(10, mode, workers=2)
    assert one.times == two.times and torch.equal(one.data, two.data)
    assert src.decoders.created <= 2  # never more decoders than workers


@pytest.mark.parametrize("name", REAL + ["decord__corrupted.mp4"])
def test_pool_decoders_built_from_the_frame_table_decode_the_same_frames(video_path, name):
    from paravt.video.opening import make_decoder

    src = VideoSource(video_path(name))
    assert src.table.frame_mappings() is not None  # torchcodec's scan exposes the raw ticks
    pooled, exact = src.decoders.new(), VideoDecoder(str(src.path), seek_mode="exact")
    n = len(src.table)
    picks = sorted({0, n // 3, n // 2, n - 1} | set(range(0, n, max(1, n // 9))))

    def frame(decoder, i):  # a frame past a bad packet decodes on the second try (see decode.py)
        for _ in range(2):
            try:
                return decoder.get_frame_at(i)
            except RuntimeError:
                pass
        return None

    for i in picks:
        want, got = frame(exact, i), frame(pooled, i)
        assert (want is None) == (got is None), f"frame {i} of {name} decodes with one decoder only"
        if want is not None:
            assert got.pts_seconds == pytest.approx(want.pts_seconds, abs=1e-9)
            assert torch.equal(got.data, want.data), f"frame {i} of {name}"
    assert make_decoder(src.path).decoder.metadata.num_frames == src.meta.num_frames


@pytest.mark.parametrize("skip", [True, False], ids=["without-disposable", "plain-decode"])
def test_frames_resized_as_they_are_decoded_never_pile_up_at_full_size(odd_size_video, skip):
    """With a ``resize``, every decode path (lanes, the own decoder, the filtered-packet path)
    hands each chunk of at most ``RESIZE_CHUNK`` freshly decoded frames to it, once, and keeps
    only what it returns: the same frames, at the caller's size."""
    from paravt.video.decode import RESIZE_CHUNK

    seen: list[tuple[int, ...]] = []

    def halve(batch: torch.Tensor) -> torch.Tensor:
        seen.append(tuple(batch.shape))
        return batch[:, :, ::2, ::2].clone()

    with VideoSource(odd_size_video, skip_disposable=skip) as src:
        full = src.overview(40, workers=2)
        small = src.overview(40, workers=2, resize=halve)
        times = [0.5, 0.6, 3.3, 7.9]
        at_full, at_small = src.frames_at(times), src.frames_at(times, resize=halve)
    assert len(full) == 40
    for a, b in ((full, small), (at_full, at_small)):
        assert a.times == b.times and a.indices == b.indices
        assert b.size == (93, 165)
        assert all(torch.equal(f[:, ::2, ::2], s) for f, s in zip(a.parts, b.parts, strict=True))
    assert max(n for n, *_ in seen) <= RESIZE_CHUNK < 40
    assert sum(n for n, *_ in seen) == 40 + 4  # each decoded frame resized once
    assert all(shape[1:] == (3, 186, 330) for shape in seen)
