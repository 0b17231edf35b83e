"""Open a video file once: check the path, scan the packets, build the decoder, translate errors.

Each failure mode gets its own message that names the file and the fix, instead of FFmpeg's
"Invalid data found when processing input" for everything.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, NamedTuple

import torch

from paravt.video.bitstream import scan_bitstream
from paravt.video.decode import short_reason, video_stream
from paravt.video.errors import NoVideoStreamError, VideoOpenError
from paravt.video.meta import FrameTable

__all__: list[str] = []  # nothing here is for the other rooms

logger = logging.getLogger(__name__)


def normalise_path(path: str | Path) -> str:
    """Accept ``file://`` URLs as the reference does; everything else is a local path."""
    text = str(path)
    text = text.removeprefix("file://")
    return text


def check_file(path: str) -> None:
    """Fail early, with a clear message, for paths FFmpeg would only call 'invalid data'."""
    p = Path(path)
    if not p.exists():
        raise VideoOpenError(
            f"video file not found: {path} (check the path; videos must be local files)", path
        )
    if p.is_dir():
        raise VideoOpenError(f"video path is a directory, not a file: {path}", path)
    try:
        size = p.stat().st_size
        with open(p, "rb") as fh:
            fh.read(1)
    except OSError as e:
        raise VideoOpenError(f"cannot read video file {path}: {e.strerror or e}", path) from None
    if size == 0:
        raise VideoOpenError(
            f"video file is empty (0 bytes): {path} (re-download or re-encode it)", path
        )


def _open_failure(path: str, err: BaseException) -> VideoOpenError:
    reason = short_reason(err)
    hint = "is it a video file? a truncated or partial download?"
    if "moov atom not found" in str(err):
        hint = "the MP4 index (moov atom) is missing: the file is probably truncated"
    return VideoOpenError(f"cannot open {path} as a video: {reason} ({hint})", path)


def scan_frames(path: str) -> tuple[FrameTable, Any]:
    """Read every packet's pts/duration/keyframe flag of the best video stream (no decoding),
    with the stream's header metadata (torchcodec's ``VideoStreamHeaderMetadata``: size, codec,
    rotation, header duration), so that opening a video needs no decoder."""
    from torchcodec.decoders import Demuxer  # public since torchcodec 0.17

    try:
        demuxer = Demuxer(path, streams="video")
    except ValueError as e:  # torchcodec's "no such stream" for the selector
        raise NoVideoStreamError(
            f"{path} has no video stream (audio-only or data file?): {short_reason(e)}", path
        ) from None
    except RuntimeError as e:
        if "stream" in str(e).lower() and "video" in str(e).lower():
            raise NoVideoStreamError(
                f"{path} has no video stream: {short_reason(e)}", path
            ) from None
        raise _open_failure(path, e) from None
    try:
        index = video_stream(demuxer).scan()
    except RuntimeError as e:
        raise _open_failure(path, e) from None
    if len(index) == 0:
        raise NoVideoStreamError(f"{path} has a video stream with no frames in it", path)
    pts_ticks, duration_ticks = getattr(index, "_pts", None), getattr(index, "_duration", None)
    ticks = None
    if isinstance(pts_ticks, torch.Tensor) and isinstance(duration_ticks, torch.Tensor):
        ticks = (pts_ticks, duration_ticks)
    header = video_stream(demuxer).metadata
    pts, is_key = index.pts_seconds, index.is_key_frame
    scan = scan_bitstream(path, header.codec, [float(pts[i]) for i in is_key.nonzero().flatten()])
    times = [round(float(t), 6) for t in pts.tolist()]
    table = FrameTable(
        pts,
        index.duration_seconds,
        is_key,
        ticks=ticks,
        restart=None if scan.restart is None else torch.tensor([t in scan.restart for t in times]),
        damaged=[i for i, t in enumerate(times) if t in scan.damaged],
        reorder_delay=scan.reorder_delay,
    )
    return table, header


class BuiltDecoder(NamedTuple):
    """A torchcodec ``VideoDecoder`` and whether it was built from the frame table (so it seeks
    to the table's restart points only)."""

    decoder: Any
    mapped: bool


def prime(decoder, path: str) -> None:
    """Decode the file's first frame once, so the decoder has seen the first packet before its
    first seek.

    Why: FFmpeg keeps what a packet told it for as long as the decoder lives, not only until the
    next restart point: parameter sets sent in band (a first packet whose PPS differs from the
    container's record, as a file spliced from two encodes has), and for H.264 the x264 build
    named by the first packet's SEI, which switches on work-arounds for that build's bugs. A
    decoder whose first packet is a later IDR decodes the same bytes into other pixels or fails
    (tests/video/test_first_packet.py). Decoding the first frame costs one picture per decoder
    (measured in benchmarks/results/bench_first_packet.json). A first frame that does
    not decode is left to the decode that asks for it (logged here)."""
    try:
        decoder.get_frame_at(0)
    except (RuntimeError, IndexError, ValueError) as e:
        logger.info("%s: the first frame does not decode (%s); decoding on", path, short_reason(e))


def make_decoder(
    path: str,
    device: str = "cpu",
    num_threads: int = 1,
    table: FrameTable | None = None,
    *,
    primed: bool = True,
) -> BuiltDecoder:
    """A torchcodec ``VideoDecoder`` whose indices match the frame table: given the ``table``, it
    is built from it (``custom_frame_mappings``: no second scan of the file, and it seeks to the
    table's restart points only), else in exact mode (its own scan, every flagged keyframe).

    A file torchcodec will not take a table for (no duration or frame count in its header: it
    raises ``ValueError``; an old torchcodec: ``TypeError``) gets an exact-mode decoder; check
    ``is_mapped`` on the result before trusting its seeks (``video.sequential`` decodes such a
    file where its flags cannot be trusted).

    ``primed`` (the default): the decoder has decoded the first frame (``prime``); off only for a
    decoder that never decodes (the frame counter of ``SourceDecoders.counted_frames``)."""
    built = _build_decoder(path, device, num_threads, table)
    if primed:
        prime(built.decoder, path)
    return built


def _build_decoder(
    path: str, device: str, num_threads: int, table: FrameTable | None
) -> BuiltDecoder:
    from torchcodec.decoders import VideoDecoder

    mappings = table.frame_mappings() if table is not None else None
    if mappings is not None:
        try:
            decoder = VideoDecoder(
                path, device=device, num_ffmpeg_threads=num_threads, custom_frame_mappings=mappings
            )
            return BuiltDecoder(decoder, True)
        except (TypeError, ValueError, RuntimeError) as e:
            logger.info("%s: no decoder from the frame table (%s); exact mode", path, e)
    try:
        decoder = VideoDecoder(
            path, device=device, num_ffmpeg_threads=num_threads, seek_mode="exact"
        )
    except ValueError as e:
        raise NoVideoStreamError(
            f"{path} has no decodable video stream: {short_reason(e)}", path
        ) from None
    except RuntimeError as e:
        raise _open_failure(path, e) from None
    return BuiltDecoder(decoder, False)
