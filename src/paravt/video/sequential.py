"""Decode frames packet by packet from restart points, for files torchcodec cannot be told them.

Why: a ``VideoDecoder`` seeks to the keyframes of its own index. Built from paravt's frame table
(``custom_frame_mappings``) that index holds the restart points only (``video.bitstream``); but
torchcodec refuses the table for a file whose header gives no duration or frame count (a
Matroska or WebM written to a pipe, as browsers' MediaRecorder does), and in exact mode it
scans the file itself and seeks to every flagged keyframe again. For such a file with a demoted
keyframe this module decodes instead: torchcodec's own demuxer seeks to the restart point before
each group of frames (the keyframe at or before that time, which is that restart point), its
packet decoder decodes forward, and its colour converter turns the frames asked for into RGB,
the same conversion ``VideoDecoder`` applies (tested pixel for pixel).

Before its first seek the packet decoder decodes the file's first packets until a frame comes out
(``_prime``), for the reason ``opening.prime`` gives: what the first packet told FFmpeg (in-band
parameter sets, an encoder's version SEI) lasts across a seek's flush, and a decode from a later
restart point needs it.

A packet the decoder rejects (a corrupt region) is skipped and decoding goes on; a frame asked
for that never comes out is reported failed, with the decoder's reason.
"""

from __future__ import annotations

from paravt.video import ffmpeg_log
from paravt.video.decode import (
    DecodeOutcome,
    FrameResize,
    note_logged,
    resized,
    short_reason,
    video_stream,
)
from paravt.video.lanes import gop_groups
from paravt.video.meta import FrameTable

__all__: list[str] = []  # nothing here is for the other rooms

#: A frame's decoded pts and its table pts agree within this (seconds): both come from one
#: timestamp, rounded differently by two readers.
_PTS_TOLERANCE = 1e-6


class _GroupDecode:
    """One GOP group: packets from its restart point until every frame asked for came out."""

    def __init__(self, table: FrameTable, members: list[int], resize: FrameResize | None):
        self.wanted = {round(table.pts[i], 6): i for i in members}
        self.last = max(table.pts[i] for i in members)
        self.resize = resize
        self.frames: dict[int, tuple] = {}
        self.error: str | None = None

    def take(self, raw_frames, converter) -> bool:
        """Keep the frames asked for; ``True`` once the group is complete or decoding has moved
        past its last frame."""
        for raw in raw_frames:
            at = round(raw.pts_seconds, 6)
            index = self.wanted.get(at)
            if index is not None and index not in self.frames:
                data = converter.convert(raw).data.unsqueeze(0)
                self.frames[index] = (resized(data, self.resize)[0], float(raw.pts_seconds))
            if raw.pts_seconds > self.last + _PTS_TOLERANCE and len(self.frames) == len(
                self.wanted
            ):
                return True
        return len(self.frames) == len(self.wanted)


def _prime(demuxer, stream, decoder, table: FrameTable) -> None:
    """Decode from the file's first packet until a frame comes out (or the stream ends), then
    flush: the frame is dropped, what the packets told the decoder stays."""
    demuxer.seek(table.pts[0], stream=stream)
    try:
        for packet in demuxer:
            if decoder.decode(packet):
                break
    except RuntimeError:  # a first packet the codec rejects: the groups report their frames
        pass
    decoder.reset()


def _open(path: str, device: str, num_threads: int):
    """``(demuxer, stream, decoder, converter)`` of ``path``'s video stream, through torchcodec's
    public packet API (public since torchcodec 0.17; imported here: a heavy optional library)."""
    from torchcodec.decoders import ColorConverter, Demuxer

    demuxer = Demuxer(path, streams="video")
    stream = video_stream(demuxer)
    decoder = stream.make_decoder(device, num_ffmpeg_threads=num_threads)
    return demuxer, stream, decoder, ColorConverter(device)


def decode_from_restart_points(
    path: str,
    table: FrameTable,
    indices: list[int],
    resize: FrameResize | None = None,
    device: str = "cpu",
    num_threads: int = 1,
) -> DecodeOutcome:
    """Decode sorted unique ``indices`` of ``path``, each GOP group from its restart point;
    never raises for decode failures (they are reported per frame)."""
    out = DecodeOutcome()
    demuxer, stream, decoder, converter = _open(path, device, num_threads)
    _prime(demuxer, stream, decoder, table)
    for _, members in gop_groups(table, indices):
        group = _GroupDecode(table, members, resize)
        start = table.pts[table.keyframe_before(members[0])]
        demuxer.seek(start, stream=stream)
        decoder.reset()
        done = False
        with ffmpeg_log.errors() as lines:
            for packet in demuxer:
                try:
                    done = group.take(decoder.decode(packet), converter)
                except RuntimeError as e:  # a packet the codec rejects: skip it, keep decoding
                    group.error = short_reason(e)
                if done:
                    break
            if not done:
                group.take(decoder.drain(), converter)
                decoder.reset()
        note_logged(out, list(group.frames), lines)
        out.frames.update(group.frames)
        reason = group.error or "the decoder returned no frame at this time"
        out.failed.update({i: reason for i in members if i not in group.frames})
    return out


def decode_straight(
    path: str,
    table: FrameTable,
    indices: list[int],
    resize: FrameResize | None = None,
    device: str = "cpu",
    num_threads: int = 1,
) -> DecodeOutcome:
    """Decode sorted unique ``indices`` of ``path`` as a player does: every packet in order from
    the file's first, no seek, up to the last frame asked for. The fault path of
    ``SourceDecoders.settle``, for frames whose decode from a restart point logged an FFmpeg
    error: what this returns is by definition the frame a straight decode shows. Frames that
    come out after FFmpeg logged an error, up to the next restart point
    (``FrameTable.suspect_after``), are ``damaged`` with the line: the damage is in the file.

    Costs a decode of the whole file up to the last frame asked for (measured in
    benchmarks/results/bench_first_packet.json); never raises for decode failures."""
    out = DecodeOutcome()
    if not indices:
        return out
    at_pts = {round(t, 6): i for i, t in enumerate(table.pts)}
    wanted, last = set(indices), max(table.pts[i] for i in indices)
    demuxer, _, decoder, converter = _open(path, device, num_threads)
    points: dict[int, str] = {}  # a frame index where damage starts -> FFmpeg's line
    newest = -1  # the latest frame index that came out

    def take(raw_frames) -> bool:
        nonlocal newest
        for raw in raw_frames:
            i = at_pts.get(round(float(raw.pts_seconds), 6))
            if i is None:
                continue
            newest = max(newest, i)
            if i in wanted and i not in out.frames:
                data = converter.convert(raw).data.unsqueeze(0)
                out.frames[i] = (resized(data, resize)[0], float(raw.pts_seconds))
        return newest >= 0 and table.pts[newest] > last + _PTS_TOLERANCE

    done = False
    for packet in demuxer:
        before = newest
        with ffmpeg_log.errors() as lines:
            try:
                done = take(decoder.decode(packet))
            except RuntimeError as e:  # a packet the codec rejects: skip it, keep decoding
                lines.append(short_reason(e))
        if lines:
            points.setdefault(min(before + 1, len(table) - 1), lines[0])
        if done:
            break
    if not done:
        with ffmpeg_log.errors() as lines:
            take(decoder.drain())
        if lines:
            points.setdefault(min(newest + 1, len(table) - 1), lines[0])
    for i in indices:
        if i not in out.frames:
            out.failed[i] = "a straight decode from the file's start returned no frame at this time"
    for start, line in sorted(points.items()):
        for i in table.suspect_after({start}) & set(out.frames):
            out.damaged.setdefault(i, line)
    return out
