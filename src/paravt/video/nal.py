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
