"""Bad video inputs each raise a typed error whose message names the file and the problem."""

from __future__ import annotations

import pytest

from paravt.errors import ParavtError, UserError
from paravt.video import NoVideoStreamError, VideoOpenError, VideoSource


@pytest.mark.parametrize(
    "which, words",
    [
        ("missing", ["not found"]),
        ("empty", ["empty", "0 bytes"]),
        ("text", ["cannot open", "is it a video file"]),
        ("truncated", ["cannot open", "truncated"]),
        ("directory", ["directory"]),
    ],
)
def test_unusable_files_raise_open_errors(bad_files, which, words):
    path = bad_files[which]
    with pytest.raises(VideoOpenError) as info:
        VideoSource(path)
    text = str(info.value)
    assert str(path) in text
    for w in words:
        assert w in text
    assert isinstance(info.value, UserError) and isinstance(info.value, ParavtError)
    assert info.value.path == str(path)


def test_audio_only_file_has_no_video_stream(bad_files):
    with pytest.raises(NoVideoStreamError, match="no video stream"):
        VideoSource(bad_files["audio_only"])


def test_file_url_prefix_is_accepted(video_path):
    p = video_path("torchcodec__h265_video.mp4")
    assert VideoSource(f"file://{p}").meta.num_frames == 10
