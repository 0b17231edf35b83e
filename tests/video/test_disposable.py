"""Decoding without disposable H.264 pictures gives exactly a full decode's frames, for less work."""

from __future__ import annotations

import pytest
import torch
from torchcodec.decoders import VideoDecoder

from paravt.tools.crop_video import CropConfig, WindowRequest, execute_windows
from paravt.video import VideoSource
from paravt.video.disposable import decode_skipping, is_disposable, worth_skipping

pytest.importorskip("av")


def _nal(ref_idc: int, nal_type: int, payload: bytes = b"\x88\x84") -> bytes:
    return bytes([(ref_idc << 5) | nal_type]) + payload


def _avcc(*nals: bytes) -> bytes:
    return b"".join(len(n).to_bytes(4, "big") + n for n in nals)


def _annexb(*nals: bytes) -> bytes:
    return b"".join(b"\x00\x00\x00\x01" + n for n in nals)


@pytest.mark.parametrize("pack,size", [(_avcc, 4), (_annexb, 0)])
def test_is_disposable_reads_nal_ref_idc_of_every_slice(pack, size):
    assert is_disposable(pack(_nal(0, 1)), size)
    assert is_disposable(pack(_nal(0, 6), _nal(0, 1), _nal(0, 1)), size)  # SEI + two slices
    assert not is_disposable(pack(_nal(2, 1)), size)  # a reference B/P slice
    assert not is_disposable(pack(_nal(3, 5)), size)  # IDR
    assert not is_disposable(pack(_nal(0, 1), _nal(2, 1)), size)  # one reference slice is enough
    assert not is_disposable(pack(_nal(0, 6)), size)  # no slice at all: keep it
    assert not is_disposable(b"", size)


def _full_decode(path, indices):
    dec = VideoDecoder(str(path), seek_mode="exact", num_ffmpeg_threads=1)
    batch = dec.get_frames_at(indices)
    return batch.data, batch.pts_seconds.tolist()


def _assert_same_as_full_decode(path, indices):
    src = VideoSource(path)
    out = decode_skipping(src.path, src.table, indices)
    assert out is not None, "the skipping path did not apply"
    data, pts = _full_decode(path, indices)
    assert sorted(out.frames) == indices and not out.failed and out.pictures_skipped > 0
    for j, i in enumerate(indices):
        frame, t = out.frames[i]
        assert t == pytest.approx(pts[j], abs=1e-9)
        assert torch.equal(frame, data[j]), f"frame {i} differs from a full decode"


def test_frames_equal_a_full_decode_across_several_gops(bframes_video):
    # 1 fps-like picks over three GOPs (keyframe every 90 frames), B-frames among them
    indices = [5, 31, 62, 89, 95, 130, 200, 201, 202, 269, 500]
    _assert_same_as_full_decode(bframes_video, indices)


def test_frames_equal_a_full_decode_on_an_open_gop_stream(open_gop_video):
    src = VideoSource(open_gop_video)
    indices = [0, 44, 88, 89, 90, 91, 179, 180, 300, 599]
    out = src._decode_indices(indices)
    data, _ = _full_decode(open_gop_video, indices)
    assert not out.failed
    for j, i in enumerate(indices):
        assert torch.equal(out.frames[i][0], data[j]), f"frame {i} differs from a full decode"


def test_full_range_bt709_real_file_keeps_its_colours(video_path):
    path = video_path("torchcodec__bt709_full_range.mp4")
    n = VideoSource(path).meta.num_frames
    _assert_same_as_full_decode(path, sorted({n // 3, n // 2, n - 1}))


def test_streams_without_b_frames_are_not_demuxed_twice(gop_video, video_path):
    assert not worth_skipping(str(gop_video))  # x264 ultrafast: no B-frames
    assert not worth_skipping(str(video_path("torchcodec__h265_video.mp4")))  # not H.264
    assert worth_skipping(str(video_path("torchcodec__bt709_full_range.mp4")))


def test_corrupt_file_gives_the_same_outcome_with_and_without_skipping(video_path):
    path = video_path("decord__corrupted.mp4")
    fast, slow = VideoSource(path), VideoSource(path, skip_disposable=False)
    n = fast.meta.num_frames
    indices = list(range(0, n, max(1, n // 12)))
    a, b = fast._decode_indices(indices), slow._decode_indices(indices)
    assert sorted(a.frames) == sorted(b.frames) and a.failed.keys() == b.failed.keys()
    for i in a.frames:
        assert torch.equal(a.frames[i][0], b.frames[i][0])


@pytest.mark.parametrize("workers", [1, 2])
def test_crop_video_batch_is_identical_with_skipping_off(bframes_video, workers):
    calls = [(0.5, 12.5), (3.0, 9.0), (14.0, 19.5), (3.0, 9.0)]
    reqs = [WindowRequest(str(bframes_video), {"start_time": s, "end_time": e}) for s, e in calls]
    on = execute_windows(reqs, CropConfig(workers=workers))
    off = execute_windows(reqs, CropConfig(workers=workers, skip_disposable=False))
    assert on.stats.pictures_skipped > 0 and off.stats.pictures_skipped == 0
    assert on.stats.frames_decoded == off.stats.frames_decoded
    for a, b in zip(on.results, off.results):
        assert a.ok and b.ok
        assert a.times == b.times and torch.equal(a.frames, b.frames)
