"""NAL units of H.264 and HEVC packets: where they start, their headers, their bytes.

Shared by ``video.disposable`` (which pictures nothing references) and ``video.bitstream`` (which
keyframes a decoder can restart from). A packet is either length-prefixed (MP4/Matroska:
``avcC``/``hvcC`` say how many bytes the prefix has) or Annex B (``00 00 01`` start codes).
"""

from __future__ import annotations

__all__: list[str] = []  # nothing here is for the other rooms


def nal_length_size(extradata: bytes | None) -> int:
    """Bytes of the NAL length prefix for avcC (MP4/MKV) streams; 0 for Annex B start codes."""
    if extradata and len(extradata) >= 7 and extradata[0] == 1:
        return (extradata[4] & 3) + 1
    return 0


def hvcc_length_size(extradata: bytes | None) -> int:
    """Bytes of the NAL length prefix of an HEVC stream with an ``hvcC`` record; 0 for Annex B."""
    if extradata and len(extradata) >= 23 and extradata[0] == 1:
        return (extradata[21] & 3) + 1
    return 0


def hvcc_layout(extradata: bytes | None) -> tuple[int, int] | None:
    """``(NAL length size, temporal sub-layers)`` from an ``hvcC`` record; ``None`` when the
    stream has no such record (Annex B) or does not say how many sub-layers it has."""
    if not extradata or len(extradata) < 23 or extradata[0] != 1:
        return None
    layers = (extradata[21] >> 3) & 7
    return ((extradata[21] & 3) + 1, layers) if layers else None


def nal_starts(data: bytes, length_size: int, header_bytes: int = 1):
    """The offset of every NAL unit's header in one packet (at least ``header_bytes`` long)."""
    n = len(data)
    if length_size:
        i = 0
        while i + length_size < n:
            size = int.from_bytes(data[i : i + length_size], "big")
            i += length_size
            if size < header_bytes or i + header_bytes > n:
                return
            yield i
            i += size
        return
    i = data.find(b"\x00\x00\x01")
    while 0 <= i < n - 2 - header_bytes:
        yield i + 3
        i = data.find(b"\x00\x00\x01", i + 3)


def nal_headers(data: bytes, length_size: int, header_bytes: int = 1):
    """The first ``header_bytes`` bytes of every NAL unit in one packet."""
    for i in nal_starts(data, length_size, header_bytes):
        yield data[i : i + header_bytes]


def nal_units(data: bytes, length_size: int, header_bytes: int = 1):
    """The bytes of every NAL unit of one packet, header first (Annex B: up to the next start
    code, trailing zero bytes included, which no reader here looks at)."""
    starts = list(nal_starts(data, length_size, header_bytes))
    for n, i in enumerate(starts):
        if length_size:
            size = int.from_bytes(data[i - length_size : i], "big")
            yield data[i : i + size]
        else:
            yield data[i : starts[n + 1] - 3 if n + 1 < len(starts) else len(data)]


#: NAL unit types of parameter sets: H.264 SPS, PPS; HEVC VPS, SPS, PPS.
_PARAMETER_SETS = {"h264": (7, 8), "hevc": (32, 33, 34)}
#: NAL unit types of (prefix) SEI: H.264, HEVC.
_SEI = {"h264": 6, "hevc": 39}
#: SEI payload type of user data unregistered: where an encoder names itself (x264, x265).
_USER_DATA_UNREGISTERED = 5


def sei_number(sei: bytes, i: int) -> tuple[int | None, int]:
    """An SEI message's type or size at ``i`` (each 0xFF byte adds 255, the next byte ends it)
    and the index after it; ``None`` when the unit ends first."""
    value, n = 0, len(sei)
    while i < n and sei[i] == 0xFF:
        value, i = value + 255, i + 1
    if i >= n:
        return None, i
    return value + sei[i], i + 1


def sei_payload_types(rbsp: bytes) -> list[int | None]:
    """The payload types of the messages of one SEI NAL unit's RBSP (header removed); a
    ``None`` at the end where the unit does not parse."""
    types: list[int | None] = []
    i, n = 0, len(rbsp)
    while i < n and rbsp[i] != 0x80:  # 0x80: the RBSP trailing bits
        kind, i = sei_number(rbsp, i)
        size, i = sei_number(rbsp, i)
        types.append(kind if size is not None else None)
        if kind is None or size is None:
            break
        i += size
    return types


def start_units(codec: str, packet: bytes, length_size: int) -> bytes:
    """What a decoder must have seen of the stream's first packet to decode a later restart
    point as a straight decode does, framed as ``packet`` is (length prefixes or start codes):
    its parameter sets and its SEI units that hold only user data unregistered (an encoder's
    version string, which FFmpeg reads into bug work-arounds for as long as it decodes).

    Other SEI messages (buffering period, picture timing, recovery point) describe the first
    picture only and are left out. Empty for another codec."""
    if codec not in _PARAMETER_SETS:
        return b""
    header = 2 if codec == "hevc" else 1
    out = []
    for unit in nal_units(packet, length_size, header):
        kind = unit[0] & 0x1F if codec == "h264" else (unit[0] >> 1) & 0x3F
        if kind == _SEI[codec]:
            rbsp = unit[header:].replace(b"\x00\x00\x03", b"\x00\x00")
            types = sei_payload_types(rbsp)
            if not types or any(t != _USER_DATA_UNREGISTERED for t in types):
                continue
        elif kind not in _PARAMETER_SETS[codec]:
            continue
        unit = bytes(unit).rstrip(b"\x00") if not length_size else bytes(unit)
        prefix = len(unit).to_bytes(length_size, "big") if length_size else b"\x00\x00\x00\x01"
        out.append(prefix + unit)
    return b"".join(out)
