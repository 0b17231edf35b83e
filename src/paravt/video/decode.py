"""Decode a sorted set of frame indices with one decoder, surviving corrupt regions.

The fast path is one ``get_frames_at`` call: torchcodec walks the sorted indices, seeking only
when the next frame is in a later GOP, so frames that share a GOP share its decode. If that call
fails (a corrupt packet anywhere on the way), the same indices are retried one by one on the same
decoder, which records exactly which frames failed and keeps the ones that decode. A frame whose
decoded pts is not the one the frame table expected (a decoder that resynchronised after a bad
packet) is kept with its true time; ``VideoSource`` reports it, per request, when it assembles
the frames.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class DecodeOutcome:
    """Frames by table index: ``frames[i] = (chw uint8 tensor, decoded pts in seconds)``."""

    frames: dict[int, tuple[torch.Tensor, float]] = field(default_factory=dict)
    failed: dict[int, str] = field(default_factory=dict)
    pictures_skipped: int = 0  # disposable pictures left out of the decode (video.disposable)


def short_reason(err: BaseException) -> str:
    """The FFmpeg part of a torchcodec error, without the C++ file/line prefix."""
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if ", " in text and ".cpp:" in text:
        text = text.split(", ")[-1]
    return text


def decode_indices(decoder, indices: list[int]) -> DecodeOutcome:
    """Decode ``indices`` (sorted, unique) with ``decoder``; never raises for decode failures."""
    out = DecodeOutcome()
    if not indices:
        return out
    try:
        batch = decoder.get_frames_at(indices)
        pts = batch.pts_seconds.tolist()
        for j, i in enumerate(indices):
            out.frames[i] = (batch.data[j], float(pts[j]))
    except (RuntimeError, IndexError, ValueError):
        out.frames.clear()
        for i in indices:
            # a frame decoded past a bad packet fails the first time the decoder crosses that
            # packet and decodes on the next try, so each index gets a second chance
            for _attempt in range(2):
                try:
                    one = decoder.get_frames_at([i])
                    out.frames[i] = (one.data[0], float(one.pts_seconds[0]))
                    out.failed.pop(i, None)
                    break
                except (RuntimeError, IndexError, ValueError) as e:
                    out.failed[i] = short_reason(e)
    return out
