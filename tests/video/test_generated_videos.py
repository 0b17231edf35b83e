"""The generated test videos: each stand-in has the properties of the real file it replaces, and
the kinds with no real counterpart (rotation, no duration, several streams) open and decode."""

from __future__ import annotations

import media
import pytest
import torch

from paravt.video import VideoSource

#: What tests read from each real file: (codec, width, height, frames, duration, keyframes).
#: Measured on ../shared/videos; the corrupt file's stand-in is smaller (size is not what it tests).
REAL_PROPERTIES = {
    "torchcodec__testsrc2.mp4": ("h264", 1280, 720, 60, 2.0, 1),
    "decord__flipping_a_pancake.mkv": ("h264", 426, 240, 310, 10.333, 3),
    "torchcodec__var_fps_video.mp4": ("h264", 128, 128, 300, 14.967, 2),
    "torchcodec__h265_video.mp4": ("hevc", 128, 128, 10, 1.0, None),
    "mediabunny__trim-buck-bunny.webm": ("vp9", 320, 180, 120, 4.999, None),
    "torchcodec__bt709_full_range.mp4": ("h264", 1280, 720, 30, 1.0, 1),
    "decord__corrupted.mp4": ("h264", None, None, 50, 5.0, 1),
}


def _properties(src: VideoSource, name: str) -> tuple:
    m = src.meta
    want = REAL_PROPERTIES[name]
    return (
        m.codec,
        m.width if want[1] else None,
        m.height if want[2] else None,
        m.num_frames,
        round(m.duration, 2),
        m.num_keyframes if want[5] else None,
    )


@pytest.mark.parametrize("name", sorted(media.STAND_INS))
def test_stand_in_has_the_properties_of_the_real_file(name, stand_ins):
    path = stand_ins.path(name)
    if path is None:
        pytest.skip(
            stand_ins.missing[name]
        )  # this ffmpeg lacks the encoder: say so, do not fake it
    codec, w, h, n, duration, keyframes = REAL_PROPERTIES[name]
    want = (codec, w, h, n, round(duration, 2), keyframes)
    assert _properties(VideoSource(path), name) == want
    real = media.SHARED_VIDEOS / name
    if real.is_file():  # with ../shared present: the table still describes the real file
        assert _properties(VideoSource(real), name) == want


def test_corrupt_stand_in_fails_one_frame_and_returns_the_rest(stand_ins):
    src = VideoSource(stand_ins.path("decord__corrupted.mp4"))
    every = src.frames_at([(i + 0.5) / 10 for i in range(50)])
    assert len(every) == 49 and len(every.failed) == 1
    assert 0.0 <= every.failed[0] <= src.meta.duration
    assert any("could not be decoded" in w for w in every.warnings)


def test_full_range_stand_in_is_tagged_full_range(stand_ins):
    import av  # heavy optional library

    with av.open(str(stand_ins.path("torchcodec__bt709_full_range.mp4"))) as box:
        stream = box.streams.video[0]
        assert stream.codec_context.color_range == 2  # AVCOL_RANGE_JPEG: full range
        assert stream.codec_context.has_b_frames


def test_rotated_video_reports_its_rotation_and_frames_match_the_meta(extra_videos):
    src = VideoSource(extra_videos["rotated.mp4"])
    assert src.meta.rotation == 90.0
    assert (src.meta.width, src.meta.height) == (90, 160)  # displayed size: turned upright
    frames = src.overview(4)
    assert tuple(frames.data.shape) == (4, 3, 160, 90) and not frames.failed


def test_video_without_a_duration_in_its_header_gets_one_from_its_frames(extra_videos):
    src = VideoSource(extra_videos["no_duration.mkv"])
    assert src.meta.num_frames == 50 and src.meta.duration == pytest.approx(2.0)
    frames = src.frames_at([0.0, 1.0, 1.99])
    assert frames.times == pytest.approx([0.0, 1.0, 1.96]) and not frames.failed


def test_several_streams_the_first_video_stream_is_decoded(extra_videos):
    src = VideoSource(extra_videos["multi_stream.mkv"])
    assert (src.meta.width, src.meta.height, src.meta.num_frames) == (160, 90, 75)
    frames = src.overview(3)
    assert frames.data.dtype == torch.uint8 and tuple(frames.data.shape[1:]) == (3, 90, 160)
