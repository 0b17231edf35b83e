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


def _caught(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the test looks at what was raised
        return e
    raise AssertionError("expected an exception")


def test_read_failures_are_told_apart_from_bugs(bad_files):
    """A bad file (typed error, OSError, the decoder's own RuntimeError) is a read failure; a
    TypeError, a RuntimeError of a tensor op or a ValueError for a bad decoder argument is not."""
    import torch
    from torchcodec.decoders import VideoDecoder

    from paravt.video.errors import is_read_failure

    assert is_read_failure(_caught(lambda: VideoSource(bad_files["text"])))
    assert is_read_failure(_caught(lambda: (bad_files["directory"] / "nope").read_bytes()))
    decoder_refusal = _caught(lambda: VideoDecoder(str(bad_files["text"])))
    assert isinstance(decoder_refusal, RuntimeError) and is_read_failure(decoder_refusal)
    assert not is_read_failure(_caught(lambda: VideoSource(bad_files["text"], 3)))  # TypeError
    tensor_bug = _caught(lambda: torch.cat([torch.zeros(2, 3), torch.zeros(2, 4)]))
    assert isinstance(tensor_bug, RuntimeError) and not is_read_failure(tensor_bug)
    misuse = _caught(lambda: VideoDecoder(str(bad_files["text"]), seek_mode="sideways"))
    assert isinstance(misuse, ValueError) and not is_read_failure(misuse)
