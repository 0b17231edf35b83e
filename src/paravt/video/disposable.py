"""Decode H.264 and HEVC frames without the disposable pictures between them.

Why: reaching a frame means decoding from its keyframe, and for a 10-30 s crop_video window at
1 fps that is every picture of the window. Some pictures are never a reference for another, so
leaving them out of the bitstream changes no other picture's pixels:

* H.264: a picture whose slices all have ``nal_ref_idc == 0``. With x264's defaults (3 B-frames,
  B-pyramid) about 40% of the pictures are such disposable B-frames, and FFmpeg decodes the same
  60 s of 720p in 62% of the time without them (``ffmpeg -skip_frame noref``, measured here).
* HEVC: a sub-layer non-reference picture (NAL unit types TRAIL_N, TSA_N, STSA_N, RADL_N, RASL_N
  and the reserved even types up to 14) of the highest temporal sub-layer; such a picture may
  only be referenced by a higher sub-layer, and there is none. x265's defaults make ~60% of the
  pictures TRAIL_N, all in one sub-layer. The sub-layer count comes from the MP4/Matroska
  ``hvcC`` record; a stream without one (Annex B) is decoded the normal way.
* VP9 is not skipped: a VP9 frame is disposable only when it refreshes none of the eight
  reference slots, and libvpx (outside its SVC/temporal-layer modes) refreshes one on every
  frame, so there is nothing to leave out (``bench_tool_exec.py`` counts them per file).

The same filtered stream also ends each GOP at the last picture asked for. A normal decode cannot:
with B-frames the decoder holds pictures back for reordering, so to return a frame it first
decodes the next few packets, which nothing asked for. A keyframe overview (one keyframe a GOP)
is the extreme case: alone, each keyframe decodes in ~60% of the CPU time (64 keyframes of 720p
x264 ``veryfast`` at a 2 s GOP: 0.30 s instead of 0.49 s, same pixels).

torchcodec has no skip option, so the skipping happens on the packets instead:

1. PyAV (its own libav* build) demuxes, for each GOP of the lane, the packets from the keyframe
   to the last frame asked for, and drops each disposable packet that is not a frame asked for;
2. the rest is muxed, timestamps untouched, into an in-memory Matroska stream; an HEVC CRA
   keyframe that starts a GOP after an earlier GOP's packets (whatever lay between was left
   out) is relabelled BLA, so the decoder restarts its picture order count there
   (``hevc_cra_as_bla`` says why); H.264 cannot relabel an open-GOP keyframe (a non-IDR I
   picture, x264 ``open-gop=1``) and the count can go wrong the same way, so the stream starts
   anew there, on a decoder of its own (~7 ms); x264's default closed GOPs start at IDR
   pictures, which reset the count, and stay in one stream;
3. every keyframe but the file's first carries, in front of its own NAL units, the first
   packet's parameter sets and encoder SEI (``nal.start_units``): a segment's decoder never
   sees the first packet, and FFmpeg decodes a later picture by what that packet told it
   (in-band parameter sets, the x264 build it works around; tests/video/test_first_packet.py);
4. torchcodec decodes that stream, so colour conversion and pixels are exactly a full decode's
   (tested frame for frame on the shared files, full-range BT.709 included, and on generated
   x264/x265 clips).

Anything unexpected — another codec, a rotated stream, a seek that does not land on the keyframe,
a keyframe flag that is not a restart point (``video.bitstream``) inside the range,
a timestamp that does not come back, a decode error (corrupt region), PyAV missing — returns
``None`` and the caller decodes the normal way, which also reports per-frame failures.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from paravt.video import ffmpeg_log
from paravt.video.decode import DecodeOutcome, FrameResize, chunks, note_logged, resized
from paravt.video.lanes import gop_groups
from paravt.video.meta import FrameTable
from paravt.video.nal import (
    hvcc_layout,
    hvcc_length_size,
    nal_headers,
    nal_length_size,
    nal_starts,
    start_units,
)

__all__ = ["FilteredStream", "SKIPPABLE_CODECS", "decode_skipping"]

logger = logging.getLogger(__name__)
#: codecs (torchcodec / FFmpeg names) whose disposable pictures are left out of the decode
SKIPPABLE_CODECS = ("h264", "hevc")

#: H.264 NAL unit types that carry a coded slice (non-IDR, partition A, IDR).
_SLICE_TYPES = (1, 2, 5)

#: HEVC VCL NAL unit types 0-31; the even ones up to 14 are sub-layer non-reference pictures.
_HEVC_VCL_TYPES = range(32)
_HEVC_SUB_LAYER_NON_REF = (0, 2, 4, 6, 8, 10, 12, 14)
#: HEVC NAL unit types of a clean random access picture and of a broken link access picture
#: that may have leading pictures.
_HEVC_CRA, _HEVC_BLA_W_LP = 21, 16


def is_disposable(data: bytes, length_size: int) -> bool:
    """H.264: the packet has slices and none of them is a reference (``nal_ref_idc == 0``)."""
    saw_slice = False
    for (header,) in nal_headers(data, length_size):
        if header & 0x1F in _SLICE_TYPES:
            saw_slice = True
            if (header >> 5) & 3:
                return False
    return saw_slice


def hevc_is_disposable(data: bytes, length_size: int, top_temporal_id: int) -> bool:
    """HEVC: the packet has VCL NAL units and every one is a sub-layer non-reference picture of
    the highest temporal sub-layer ``top_temporal_id`` (nothing can refer to it)."""
    saw_vcl = False
    for b0, b1 in nal_headers(data, length_size, header_bytes=2):
        nal_type, temporal_id = (b0 >> 1) & 0x3F, (b1 & 7) - 1
        if nal_type in _HEVC_VCL_TYPES:
            saw_vcl = True
            if nal_type not in _HEVC_SUB_LAYER_NON_REF or temporal_id != top_temporal_id:
                return False
    return saw_vcl


def hevc_cra_as_bla(data: bytes, length_size: int) -> bytes:
    """The packet with every CRA slice (NAL unit type 21) relabelled BLA_W_LP (16); ``data``
    itself when it has none.

    Why: a CRA picture keeps counting picture order from the reference picture decoded before it,
    and HEVC codes only the low bits of that count (x265: 8 bits, so 256 pictures). Reached after
    a jump over more than half of that (a keyframe overview of 5 s GOPs: 150 pictures), the
    decoder infers the wrong high bits and outputs the frames out of order. A BLA picture starts
    the count afresh and makes the decoder output every picture before it first; relabelling a
    CRA as BLA is the splice the standard provides for (its slices' syntax is the same). Its
    leading pictures, which a BLA cannot use, are never in a jumped-to GOP's stream here. (A
    CRA whose header asks not to output the pictures before it would lose them: their pts do not
    come back and the lane decodes the normal way.)
    """
    out = None
    for i in nal_starts(data, length_size, header_bytes=2):
        if (data[i] >> 1) & 0x3F == _HEVC_CRA:
            if out is None:
                out = bytearray(data)
            out[i] = (data[i] & 0x81) | (_HEVC_BLA_W_LP << 1)
    return data if out is None else bytes(out)


def h264_has_idr(data: bytes, length_size: int) -> bool:
    """Whether the packet holds an IDR slice (NAL unit type 5)."""
    return any(h[0] & 0x1F == 5 for h in nal_headers(data, length_size))


def splice_rewrite(codec: str, extradata: bytes | None) -> Callable[[bytes], bytes | None] | None:
    """How a keyframe packet that follows an earlier GOP's packets in the filtered stream is
    spliced in: rewritten (HEVC CRA as BLA), kept as it is (an H.264 IDR, which resets the
    picture order count), or ``None`` from the callable where it cannot be (an open-GOP H.264
    keyframe, a non-IDR I picture: H.264 has no relabelling, so the filtered stream starts anew
    there and that part is decoded on a decoder of its own)."""
    if codec == "hevc":
        layout = hvcc_layout(extradata)
        if layout is not None:
            size = layout[0]
            return lambda data: hevc_cra_as_bla(data, size)
    if codec == "h264":
        size = nal_length_size(extradata)
        return lambda data: data if h264_has_idr(data, size) else None
    return None


def disposable_test(codec: str, extradata: bytes | None) -> Callable[[bytes], bool] | None:
    """The per-packet test for a stream of ``codec``, or ``None`` where nothing can be skipped
    safely (another codec, HEVC without an ``hvcC`` record)."""
    if codec == "h264":
        size = nal_length_size(extradata)
        return lambda data: is_disposable(data, size)
    if codec == "hevc":
        layout = hvcc_layout(extradata)
        if layout is None:
            return None
        size, layers = layout
        return lambda data: hevc_is_disposable(data, size, layers - 1)
    return None


def worth_skipping(path: str) -> bool:
    """Whether this file's video stream is H.264 or HEVC with B-frames (so some pictures are
    disposable).

    Checked once per opened video, so streams without B-frames (x264 ``ultrafast``, most phone
    clips) never pay for a demux that would drop nothing.
    """
    try:
        import av

        with av.open(path) as inp:
            ctx = inp.streams.video[0].codec_context
            skippable = disposable_test(ctx.name, ctx.extradata) is not None
            return skippable and bool(ctx.has_b_frames)
    except Exception:  # noqa: BLE001 - unreadable by PyAV: decode the normal way
        logger.info("PyAV cannot read %s; it is decoded the normal way", path)
        logger.debug("PyAV's failure on %s", path, exc_info=True)
        return False


class _Segment:
    """One in-memory Matroska stream of filtered packets, decoded on a decoder of its own."""

    def __init__(self, template: Any):
        import av

        self.buf = io.BytesIO()
        self.out = av.open(self.buf, "w", format="matroska")
        self.ost = self.out.add_stream_from_template(template)
        self.last_dts: int | None = None

    def mux(self, pkt: Any) -> bool:
        """Append ``pkt`` (its timestamps are rescaled to the segment's time base in place);
        ``False``, nothing appended, if decode order would go backwards."""
        if pkt.dts is not None and self.last_dts is not None and pkt.dts <= self.last_dts:
            return False
        self.last_dts = pkt.dts if pkt.dts is not None else self.last_dts
        pkt.stream = self.ost
        self.out.mux(pkt)
        return True

    def close(self) -> bytes:
        self.out.close()
        return self.buf.getvalue()


@dataclass
class FilteredSegment:
    """One filtered Matroska stream and, per frame index asked for that it holds, the frame's
    position in that stream's display order."""

    data: bytes
    positions: dict[int, int]


@dataclass
class FilteredStream:
    """A lane's packets minus the unneeded disposable ones: usually one segment, more where a
    keyframe could not be spliced in (``splice_rewrite``); the file's time base; how many
    pictures were left out."""

    segments: list[FilteredSegment]
    time_base: Any
    pictures_skipped: int


class _Unsafe(Exception):
    """The filtered packets would not be a plain subset of the file's: decode the normal way."""


class _StreamFilter:
    """Builds a lane's filtered segments GOP by GOP, from one demuxer of the file."""

    def __init__(
        self,
        inp: Any,
        stream: Any,
        table: FrameTable,
        disposable: Callable,
        splice,
        start: tuple[int, bytes] | None = None,
    ):
        self.inp, self.stream, self.table = inp, stream, table
        # (pts of the file's first packet, what of it every later keyframe carries: start_units)
        self.start = start
        self.disposable = disposable
        self.splice = splice
        self.tb = stream.time_base
        self.segments = [_Segment(stream)]
        # keyframes the table demoted (video.bitstream): torchcodec would seek to one inside a
        # segment, so a GOP that holds one is decoded the normal way
        self.demoted = {round(table.pts[i] / self.tb) for i in table.demoted}
        self.target_pts: dict[int, int] = {}  # frame index asked for -> its pts in ticks
        self.muxed: dict[int, int] = {}  # pts -> the segment it went to (each pts muxed once)
        self.dropped = 0
        self.closed: list[bytes] = []

    @classmethod
    def open(cls, inp: Any, table: FrameTable) -> _StreamFilter | None:
        """A filter for the file's video stream, or ``None`` where nothing can be skipped safely."""
        videos = inp.streams.video
        stream = videos[0] if len(videos) == 1 else inp.streams.best("video")
        if stream is None:
            return None
        codec, extradata = stream.codec_context.name, stream.codec_context.extradata
        disposable = disposable_test(codec, extradata)
        if disposable is None:
            return None
        start = first_packet_units(inp, stream, codec, extradata)
        return cls(inp, stream, table, disposable, splice_rewrite(codec, extradata), start)

    def add_gop(self, members: list[int]) -> None:
        """Demux one GOP from its keyframe to its last member, keeping every packet but the
        disposable ones not asked for."""
        want = {round(self.table.pts[i] / self.tb): i for i in members}
        if len(want) != len(members):
            raise _Unsafe
        key_pts = round(self.table.pts[self.table.keyframe_before(members[0])] / self.tb)
        self.inp.seek(key_pts, stream=self.stream, backward=True, any_frame=False)
        seen = 0
        packets = (p for p in self.inp.demux(self.stream) if p.size != 0)
        for n, pkt in enumerate(packets):
            if pkt.pts is None:
                raise _Unsafe
            if n == 0:
                pkt = self._start_gop(pkt, key_pts)
            elif pkt.pts in self.demoted:
                raise _Unsafe
            seen += pkt.pts in want
            if not self._keep(pkt, want, key_pts):
                continue
            # a pts already muxed: an open GOP, whose previous GOP's pass went past this keyframe
            # to reach a leading picture asked for there and muxed these packets
            if pkt.pts not in self.muxed:
                self._mux(pkt)
            if seen == len(want):
                break
        if seen != len(want):
            raise _Unsafe

    def _keep(self, pkt: Any, want: dict[int, int], key_pts: int) -> bool:
        """Whether ``pkt`` goes into the stream: a frame asked for (recorded), or a picture that
        one may reference; not a leading picture of the previous GOP, never asked for here, nor
        a disposable one (counted)."""
        if pkt.pts in want:
            self.target_pts[want[pkt.pts]] = pkt.pts
            return True
        if pkt.pts < key_pts:
            return False
        if self.disposable(bytes(pkt)):
            self.dropped += 1
            return False
        return True

    def _start_gop(self, pkt: Any, key_pts: int) -> Any:
        """The GOP's keyframe, spliced in after an earlier GOP's packets (or a new segment),
        carrying what the file's first packet told the decoder (``start_units``)."""
        if pkt.pts != key_pts or not pkt.is_keyframe:
            raise _Unsafe
        raw = bytes(pkt)
        if self.splice is None or not self.muxed or pkt.pts in self.muxed:
            return self._carry_start(pkt, raw, raw)
        spliced = self.splice(raw)
        if spliced is None:
            self.segments.append(_Segment(self.stream))
            spliced = raw
        return self._carry_start(pkt, raw, spliced)

    def _carry_start(self, pkt: Any, raw: bytes, data: bytes) -> Any:
        """``pkt`` with payload ``data`` and, unless it is the file's first packet, the first
        packet's parameter sets and encoder SEI in front: each segment is decoded by a fresh
        decoder that never sees the first packet, and a seek inside a segment flushes what an
        SEI told it, so every keyframe carries them (a few dozen bytes)."""
        if self.start is not None and pkt.pts != self.start[0] and self.start[1]:
            return _with_data(pkt, self.start[1] + data)
        return pkt if data is raw else _with_data(pkt, data)

    def _mux(self, pkt: Any) -> None:
        self.muxed[pkt.pts] = len(self.segments) - 1  # before muxing rescales pkt.pts
        if not self.segments[-1].mux(pkt):
            raise _Unsafe  # decode order would go backwards: not a plain subset

    def close(self) -> None:
        self.closed = [seg.close() for seg in self.segments]

    def result(self) -> FilteredStream:
        """The closed segments with each asked-for frame's display position."""
        out = []
        for n, data in enumerate(self.closed):
            order = {p: r for r, p in enumerate(sorted(p for p, m in self.muxed.items() if m == n))}
            held = {i: order[p] for i, p in self.target_pts.items() if self.muxed[p] == n}
            out.append(FilteredSegment(data, held))
        return FilteredStream(out, self.tb, self.dropped)


def first_packet_units(
    inp: Any, stream: Any, codec: str, extradata: bytes | None
) -> tuple[int, bytes] | None:
    """The pts of the file's first video packet and its ``nal.start_units`` (parameter sets,
    encoder SEI); ``None`` where it cannot be read (then nothing is carried)."""
    size = hvcc_length_size(extradata) if codec == "hevc" else nal_length_size(extradata)
    try:
        inp.seek(0, stream=stream, backward=True, any_frame=False)
        for pkt in inp.demux(stream):
            if pkt.size and pkt.pts is not None:
                return pkt.pts, start_units(codec, bytes(pkt), size)
    except Exception:  # noqa: BLE001 - PyAV's demuxer: nothing to carry, as before
        logger.debug("cannot read the first packet of %s", inp.name, exc_info=True)
    return None


def _filtered_stream(path: str, table: FrameTable, indices: list[int]) -> FilteredStream | None:
    """The lane's packets minus unneeded disposable ones, as Matroska streams; ``None`` if unsafe."""
    import av

    filt = None
    try:
        with av.open(path) as inp:
            filt = _StreamFilter.open(inp, table)
            if filt is None:
                return None
            for _, members in gop_groups(table, indices):
                filt.add_gop(members)
    except _Unsafe:
        return None
    finally:
        if filt is not None:
            filt.close()
    return filt.result() if filt is not None else None


def _with_data(pkt: Any, data: bytes) -> Any:
    """``pkt`` with its payload replaced (timestamps and keyframe flag kept)."""
    import av

    new = av.Packet(data)
    new.pts, new.dts, new.time_base = pkt.pts, pkt.dts, pkt.time_base
    new.is_keyframe = pkt.is_keyframe
    return new


def decode_skipping(
    path: str, table: FrameTable, indices: list[int], resize: FrameResize | None = None
) -> DecodeOutcome | None:
    """Decode sorted unique ``indices`` of an H.264/HEVC ``path`` on the CPU without the disposable
    pictures; ``None`` when this path does not apply or anything looks off (see the module doc).
    ``resize``: as ``decode.decode_indices`` (chunks resized as they are decoded)."""
    if not indices:
        return None
    try:
        built = _filtered_stream(path, table, indices)
        if built is None:
            return None
        from torchcodec.decoders import VideoDecoder

        decoded = {}
        logged = DecodeOutcome()
        for segment in built.segments:
            held = [i for i in indices if i in segment.positions]
            if not held:
                continue
            decoder = VideoDecoder(
                segment.data, seek_mode="exact", num_ffmpeg_threads=1, device="cpu"
            )
            for piece in chunks(held, resize):
                with ffmpeg_log.errors() as lines:
                    batch = decoder.get_frames_at([segment.positions[i] for i in piece])
                note_logged(logged, piece, lines)
                pts = batch.pts_seconds.tolist()
                data = resized(batch.data, resize)
                del batch
                decoded.update((i, (data[j], float(pts[j]))) for j, i in enumerate(piece))
    except Exception as e:  # noqa: BLE001 - PyAV missing, a corrupt region, a muxer refusal: the normal decode reports it properly
        # the same pixels come from the normal decode: one line, the traceback only at debug
        logger.info(
            "decoding %d frames of %s without disposable pictures did not work (%s: %s); "
            "decoding them the normal way",
            len(indices),
            path,
            type(e).__name__,
            e,
        )
        logger.debug("the filtered decode of %s failed", path, exc_info=True)
        return None
    out = DecodeOutcome(pictures_skipped=built.pictures_skipped, logged=logged.logged)
    # Matroska keeps milliseconds: each frame must come back within half a tick of its pts
    tolerance = 0.0005 + float(built.time_base) / 2
    for i in indices:
        if i not in decoded or abs(decoded[i][1] - table.pts[i]) > tolerance:
            return None
        out.frames[i] = (decoded[i][0], table.pts[i])
    return out
