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

A packet the decoder rejects (a corrupt region) is skipped and decoding goes on; a frame asked
for that never comes out is reported failed, with the decoder's reason.
"""

from __future__ import annotations

from paravt.video.decode import DecodeOutcome, FrameResize, resized, short_reason
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
    from torchcodec.decoders import ColorConverter, Demuxer  # public since torchcodec 0.17

    out = DecodeOutcome()
    demuxer = Demuxer(path, streams="video")
    stream = demuxer.streams[0]
    decoder = stream.make_decoder(device, num_ffmpeg_threads=num_threads)
    converter = ColorConverter(device)
    for _, members in gop_groups(table, indices):
        group = _GroupDecode(table, members, resize)
        start = table.pts[table.keyframe_before(members[0])]
        demuxer.seek(start, stream=stream)
        decoder.reset()
        done = False
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
        out.frames.update(group.frames)
        reason = group.error or "the decoder returned no frame at this time"
        out.failed.update({i: reason for i in members if i not in group.frames})
    return out
