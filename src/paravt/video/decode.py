"""Decode a sorted set of frame indices with one decoder, surviving corrupt regions.

The fast path is one ``get_frames_at`` call: torchcodec walks the sorted indices, seeking only
when the next frame is in a later GOP, so frames that share a GOP share its decode. If that call
fails (a corrupt packet anywhere on the way), the same indices are retried one by one on the same
decoder, which records exactly which frames failed and keeps the ones that decode. A frame whose
decoded pts is not the one the frame table expected (a decoder that resynchronised after a bad
packet) is kept with its true time; ``VideoSource`` reports it, per request, when it assembles
the frames.

Each decoder call runs inside ``ffmpeg_log.errors()``: a call during which FFmpeg logged an error
line marks the frames it returned ``logged`` (they may be concealed), and the caller decodes
those again straight from the file's start (``SourceDecoders.settle``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from paravt.video import ffmpeg_log

if TYPE_CHECKING:
    from torchcodec.decoders import Demuxer, VideoStream

__all__ = ["DecodeOutcome", "FrameResize"]

#: A caller's resize of a batch of decoded frames (``[n, 3, H, W]`` uint8, channels-last in
#: memory, as torchcodec decodes them) to the size it keeps them at; the engine passes
#: ``paravt.agent.vision.budget_resizer``'s. The video layer only calls it.
FrameResize = Callable[[torch.Tensor], torch.Tensor]

#: Frames asked of the decoder per call when they are resized as they come (``resize``): at most
#: this many full-size frames exist at once per decoder (8 frames of 720p: 22 MB) where one call
#: for a 64-frame lane would hold 177 MB. The decoder keeps its position between calls, so frames
#: of one GOP still share their decode.
RESIZE_CHUNK = 8


@dataclass
class DecodeOutcome:
    """Frames by table index: ``frames[i] = (chw uint8 tensor, decoded pts in seconds)``."""

    frames: dict[int, tuple[torch.Tensor, float]] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    pictures_skipped: int = 0  # disposable pictures left out of the decode (video.disposable)
    #: frames returned by a decoder call during which FFmpeg logged an error (its first line):
    #: decoded from a restart point, they may differ from a straight decode
    logged: dict[int, str] = field(default_factory=dict)
    #: frames that a straight decode from the file's start returned after FFmpeg logged an
    #: error (its first line): damage in the file itself, said with the frames
    damaged: dict[int, str] = field(default_factory=dict)

    def merge(self, other: DecodeOutcome) -> None:
        """Take ``other``'s frames and findings (a lane's outcome into its video's)."""
        self.frames.update(other.frames)
        self.failed.update(other.failed)
        self.pictures_skipped += other.pictures_skipped
        self.logged.update(other.logged)
        self.damaged.update(other.damaged)


def video_stream(demuxer: Demuxer) -> VideoStream:
    """The one stream of a ``Demuxer(path, streams="video")``, typed as the video stream it is
    (torchcodec declares ``streams`` as its private base class)."""
    from torchcodec.decoders import VideoStream

    stream = demuxer.streams[0]
    if not isinstance(stream, VideoStream):
        raise RuntimeError(f"torchcodec gave a {type(stream).__name__} for streams='video'")
    return stream


def short_reason(err: BaseException) -> str:
    """The FFmpeg part of a torchcodec error, without the C++ file/line prefix."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if ", " in text and ".cpp:" in text:
        text = text.split(", ")[-1]
    return text


def chunks(indices: list[int], resize: FrameResize | None) -> list[list[int]]:
    """``indices`` as one decoder call, or in ``RESIZE_CHUNK`` pieces when frames are resized as
    they come."""
    if resize is None:
        return [indices]
    return [indices[at : at + RESIZE_CHUNK] for at in range(0, len(indices), RESIZE_CHUNK)]


def resized(data: torch.Tensor, resize: FrameResize | None) -> torch.Tensor:
    """A decoded batch after the caller's ``resize`` (as decoded without one)."""
    return data if resize is None else resize(data)


def decode_indices(decoder, indices: list[int], resize: FrameResize | None = None) -> DecodeOutcome:
    """Decode ``indices`` (sorted, unique) with ``decoder``; never raises for decode failures.

    With ``resize``, frames are decoded ``RESIZE_CHUNK`` at a time and each chunk is resized
    before the next is decoded, so only frames at the caller's size are kept."""
    out = DecodeOutcome()
    if not indices:
        return out
    try:
        for piece in chunks(indices, resize):
            with ffmpeg_log.errors() as lines:
                batch = decoder.get_frames_at(piece)
            note_logged(out, piece, lines)
            pts = batch.pts_seconds.tolist()
            data = resized(batch.data, resize)
            del batch
            for j, i in enumerate(piece):
                out.frames[i] = (data[j], float(pts[j]))
    except (RuntimeError, IndexError, ValueError):
        out.frames.clear()
        out.logged.clear()
        for i in indices:
            # a frame decoded past a bad packet fails the first time the decoder crosses that
            # packet and decodes on the next try, so each index gets a second chance
            for _attempt in range(2):
                try:
                    with ffmpeg_log.errors() as lines:
                        one = decoder.get_frames_at([i])
                    note_logged(out, [i], lines)
                    out.frames[i] = (resized(one.data, resize)[0], float(one.pts_seconds[0]))
                    out.failed.pop(i, None)
                    break
                except (RuntimeError, IndexError, ValueError) as e:
                    out.failed[i] = short_reason(e)
    return out


def note_logged(out: DecodeOutcome, indices, lines: list[str]) -> None:
    """Mark ``indices`` logged (``DecodeOutcome.logged``) when their decoder call logged
    ``lines``."""
    if lines:
        for i in indices:
            out.logged.setdefault(i, lines[0])
