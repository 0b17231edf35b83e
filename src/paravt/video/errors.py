"""Typed errors of the video room.

Every error names the file (or the tool argument) and says what to do about it, because the
message is shown to a person at the CLI or, for ``InvalidWindowError``, to the model as a tool
error. They derive from ``UserError``: a bad video is bad input, not a bug, so the CLI exits 2.
"""

from __future__ import annotations

from typing import Any

from paravt.errors import UserError

__all__ = ["InvalidWindowError", "VideoError", "is_read_failure"]

#: Where the decoders' own code lives: a ``RuntimeError`` raised on its way through these
#: packages, or an error type they define, is the decoder (FFmpeg) refusing the file.
_DECODER_PACKAGES = ("torchcodec", "av")


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


def _passed_through_decoder(err: BaseException) -> bool:
    """Whether ``err`` was raised inside the decoder's code (a frame of ``_DECODER_PACKAGES``)."""
    tb = err.__traceback__
    while tb is not None:
        module = str(tb.tb_frame.f_globals.get("__name__", ""))
        if module.split(".")[0] in _DECODER_PACKAGES:
            return True
        tb = tb.tb_next
    return False


def is_read_failure(err: BaseException) -> bool:
    """True when ``err`` says the *file* cannot be read: a typed video error, an ``OSError``, a
    ``RuntimeError`` that the decoder itself raised (torchcodec reports FFmpeg failures as plain
    ``RuntimeError``) or one of PyAV's own error types.

    Why: a caller that isolates one video's failure must still tell a bad file from a bug. A
    ``TypeError`` in our own code, a ``RuntimeError`` from a tensor op of ours, or a
    ``ValueError`` for an argument we passed the decoder is not "cannot read video" and must not
    be reported to the user (or the model) as one.
    """
    if isinstance(err, (VideoError, OSError)):
        return True
    if type(err).__module__.split(".")[0] in _DECODER_PACKAGES:  # e.g. PyAV's InvalidDataError
        return True
    return isinstance(err, RuntimeError) and _passed_through_decoder(err)
