"""What the packets say before anything is decoded: which keyframes a decoder can truly restart
from, and which packets are damaged.

Restart points. Why: FFmpeg flags a packet as a keyframe when its parser thinks decoding may start there, and
torchcodec seeks to those flags. For H.264 that includes pictures that are not clean restart
points: an I picture of a stream whose SPS allows one reference frame (the parser's guess),
and a recovery point whose SEI says the pictures come right only ``recovery_frame_cnt`` frames
later (x264 ``intra-refresh``: every "keyframe" is a P picture). A decode that starts at such a
flag hands back pictures built on reference frames the decoder never saw (concealment: green or
smeared blocks), or drops pictures until the recovery count runs out, and torchcodec then
returns other frames than the ones asked for. Nothing in the decoded frame says so.

So a keyframe is a restart point only when the bitstream says decoding may restart there:

* H.264: the packet carries an IDR slice (NAL unit type 5), or a recovery point SEI
  (payload type 6) with ``recovery_frame_cnt == 0``, the open-GOP keyframe of x264 and of
  broadcast encoders (the pictures from it on, in output order, decode exactly);
* HEVC: an IRAP picture (NAL unit types 16 to 23: BLA, IDR, CRA); a CRA's leading pictures come
  before it in presentation order, so they belong to the previous restart point's range;
* every other codec (VP8, VP9, AV1, MPEG-4 ...): the container's flag (their keyframes reset
  every reference).

The first keyframe always counts: a decode has to start somewhere, and one from the file's
start is what a player does. A keyframe that is not a restart point is "demoted": frames after
it are decoded from the restart point before it, which costs decode time and never pixels.

Damage. A packet whose length-prefixed NAL units do not add up to the packet (a truncated or
overwritten region: "invalid NAL unit size") decodes into concealed blocks, and so does every
picture that references it; FFmpeg returns those frames as if nothing happened. The scan
records such packets, so the frames decoded after one carry a warning
(``FrameTable.suspect_after``). Damage inside slice data, with intact NAL sizes, shows only at
decode time, when the decoder fails a frame or returns another one (``VideoSource.assemble``
treats those the same way).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from paravt.video.nal import hvcc_length_size, nal_length_size, nal_units, sei_number

__all__ = ["scan_bitstream"]

logger = logging.getLogger(__name__)

#: H.264 NAL unit types: IDR slice, supplemental enhancement information.
_H264_IDR, _H264_SEI = 5, 6
#: H.264 SEI payload type of a recovery point.
_SEI_RECOVERY_POINT = 6
#: HEVC NAL unit types of an intra random access point picture (BLA_W_LP .. reserved IRAP 23).
_HEVC_IRAP = range(16, 24)


def _rbsp(payload: bytes) -> bytes:
    """A NAL unit's payload without its emulation-prevention bytes (``00 00 03`` -> ``00 00``)."""
    return payload.replace(b"\x00\x00\x03", b"\x00\x00")


def _read_ue(data: bytes) -> int | None:
    """The first unsigned Exp-Golomb number of ``data`` (``None`` if it runs past the end)."""
    bits = "".join(f"{b:08b}" for b in data[:8])
    zeros = len(bits) - len(bits.lstrip("0"))
    if 2 * zeros + 1 > len(bits):
        return None
    return int(bits[zeros : 2 * zeros + 1], 2) - 1


def recovery_frame_count(sei: bytes) -> int | None:
    """``recovery_frame_cnt`` of the recovery point message in one H.264 SEI NAL unit's RBSP
    (header byte removed), or ``None`` when it holds none."""
    i, n = 0, len(sei)
    while i < n and sei[i] != 0x80:  # 0x80: the RBSP trailing bits
        kind, i = sei_number(sei, i)
        size, i = sei_number(sei, i)
        if kind is None or size is None:
            return None
        if kind == _SEI_RECOVERY_POINT:
            return _read_ue(sei[i : i + size])
        i += size
    return None


def h264_restarts_here(packet: bytes, length_size: int) -> bool:
    """Whether decoding may restart at this H.264 packet: an IDR slice, or a recovery point
    whose pictures are exact from here on (``recovery_frame_cnt == 0``)."""
    exact_recovery = False
    for unit in nal_units(packet, length_size):
        kind = unit[0] & 0x1F
        if kind == _H264_IDR:
            return True
        if kind == _H264_SEI and recovery_frame_count(_rbsp(unit[1:])) == 0:
            exact_recovery = True
    return exact_recovery


def hevc_restarts_here(packet: bytes, length_size: int) -> bool:
    """Whether this HEVC packet holds an IRAP picture."""
    return any((unit[0] >> 1) & 0x3F in _HEVC_IRAP for unit in nal_units(packet, length_size, 2))


def restart_test(codec: str | None, extradata: bytes | None) -> Callable[[bytes], bool] | None:
    """The per-packet restart test of ``codec``, or ``None`` where the container's keyframe flag
    is trusted as it is (codecs whose keyframes reset every reference)."""
    if codec == "h264":
        size = nal_length_size(extradata)
        return lambda data: h264_restarts_here(data, size)
    if codec == "hevc":
        size = _length_size(codec, extradata)
        return lambda data: hevc_restarts_here(data, size)
    return None


@dataclass
class BitstreamScan:
    """What one pass over a file's packets found (seconds are pts rounded to the microsecond).

    ``restart``: the keyframes that are restart points, or ``None`` where every keyframe flag
    is trusted; ``damaged``: the pts of packets whose NAL units do not add up;
    ``reorder_delay``: how many frames the decoder holds back for reordering (B-frames), so how
    far before a damaged frame in display order the damage can show."""

    restart: set[float] | None = None
    damaged: set[float] = field(default_factory=set)
    reorder_delay: int = 0


def nal_units_intact(data: bytes | memoryview, length_size: int) -> bool:
    """Whether a length-prefixed packet is exactly a sequence of whole NAL units (Annex B
    packets, with start codes, have no sizes to check and count as intact)."""
    if not length_size:
        return True
    i, n = 0, len(data)
    while i < n:
        if i + length_size > n:
            return False
        size = int.from_bytes(data[i : i + length_size], "big")
        i += length_size + size
        if size == 0 or i > n:
            return False
    return True


def scan_bitstream(path: str, codec: str | None, keyframe_times: list[float]) -> BitstreamScan:
    """One demux of an H.264 or HEVC file (no decoding): its restart points among
    ``keyframe_times`` and its damaged packets. Other codecs, and a file PyAV cannot read
    (logged), get the empty scan: the container's flags are trusted, as before."""
    if codec not in ("h264", "hevc"):
        return BitstreamScan()
    wanted = {round(t, 6) for t in keyframe_times}
    try:
        import av  # heavy optional library: only H.264 and HEVC files need it
        from av.video.stream import VideoStream

        with av.open(path) as box:
            videos = box.streams.video
            stream = videos[0] if len(videos) == 1 else box.streams.best("video")
            if not isinstance(stream, VideoStream) or stream.time_base is None:
                return BitstreamScan()  # nothing PyAV can time: the container's flags stand
            ctx = stream.codec_context
            test = restart_test(ctx.name, ctx.extradata)
            if test is None:
                return BitstreamScan()
            size = _length_size(ctx.name, ctx.extradata)
            restart: set[float] = set()
            scan = BitstreamScan(restart=restart, reorder_delay=int(ctx.has_b_frames or 0))
            tb = stream.time_base
            for pkt in box.demux(stream):
                if pkt.pts is None or pkt.size == 0:
                    continue
                # a view, not a copy: the sizes are read in place (a 720p stream is ~100 MB)
                intact = nal_units_intact(memoryview(pkt), size)
                if intact and not pkt.is_keyframe:
                    continue
                at = round(float(pkt.pts * tb), 6)
                if not intact:
                    scan.damaged.add(at)
                if pkt.is_keyframe and at in wanted and test(bytes(pkt)):
                    restart.add(at)
            if len(wanted) <= 1:
                scan.restart = None
            return scan
    except Exception:  # noqa: BLE001 - unreadable by PyAV: keep the container's flags
        logger.warning(
            "cannot read the packets of %s one by one; its keyframe flags are trusted", path
        )
        logger.debug("PyAV's failure on %s", path, exc_info=True)
        return BitstreamScan()


def _length_size(codec: str, extradata: bytes | None) -> int:
    """The NAL length prefix of an H.264 (``avcC``) or HEVC (``hvcC``) stream; 0 for Annex B."""
    return hvcc_length_size(extradata) if codec == "hevc" else nal_length_size(extradata)
