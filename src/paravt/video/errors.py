"""Typed errors of the video room.

Every error names the file (or the tool argument) and says what to do about it, because the
message is shown to a person at the CLI or, for ``InvalidWindowError``, to the model as a tool
error. They derive from ``UserError``: a bad video is bad input, not a bug, so the CLI exits 2.
"""

from __future__ import annotations

from typing import Any

from paravt.errors import UserError


class VideoError(UserError):
    """Base of all video errors (a subclass of ``ParavtError`` through ``UserError``)."""

    kind = "video"

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path


class VideoOpenError(VideoError):
    """The file is missing, empty, not a media file, or FFmpeg cannot open it."""

    kind = "open"


class NoVideoStreamError(VideoError):
    """The file opens but holds no decodable video stream (e.g. audio only)."""

    kind = "no_video_stream"


class VideoDecodeError(VideoError):
    """No requested frame could be decoded (partial failures are reported in ``Frames.failed``)."""

    kind = "decode"


class InvalidWindowError(VideoError):
    """A crop_video window argument that cannot be used; the message is written for the model."""

    kind = "invalid_window"

    def __init__(
        self,
        message: str,
        argument: str,
        value: Any,
        valid_range: tuple[float, float] | None = None,
        path: str | None = None,
    ):
        super().__init__(message, path=path)
        self.argument = argument
        self.value = value
        self.valid_range = valid_range
