"""Pixels and encoding of one toy video: a moving grey background, then the coloured needle.

The background is grey on purpose (R = G = B): drifting sine gratings, per-frame grain and two
grey squares that bounce around, so consecutive frames differ but no pixel is ever saturated and
the needle colours stay unambiguous after H.264's 4:2:0 chroma subsampling. Frames are built for
the whole video at once with numpy (no per-frame Python loop) and encoded in-process with PyAV's
libx264 (measured 3x faster than piping rawvideo to the ffmpeg binary for these short files).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from paravt.toy.task import PALETTE, VideoSpec

__all__: list[str] = []  # nothing here is for the other rooms


def _bounce(x0: float, v: float, t: np.ndarray, span: float) -> np.ndarray:
    """Position on a segment of length ``span`` moving at ``v`` px/s, reflecting at the ends."""
    p = np.mod(x0 + v * t, 2 * span)
    return np.where(p > span, 2 * span - p, p)


def render_frames(spec: VideoSpec) -> np.ndarray:
    """``[frames, size, size, 3]`` uint8 RGB frames of the whole video.

    Every term is separable in space and time, so the work is a few broadcast multiply-adds
    over the ``[frames, size, size]`` volume and no transcendental function runs on it.
    """
    rng = np.random.default_rng(spec.background_seed)
    n, s = spec.num_frames, spec.size
    t = np.arange(n, dtype=np.float32) / spec.fps
    yy, xx = np.mgrid[0:s, 0:s].astype(np.float32)
    grey = np.full((n, s, s), 118.0, dtype=np.float32)
    for _ in range(3):  # drifting gratings: sin(space + time) = sin·cos + cos·sin
        fx, fy = rng.uniform(-2.5, 2.5, size=2)
        speed = rng.uniform(0.05, 0.4) * rng.choice([-1.0, 1.0])
        amp = np.float32(rng.uniform(15, 35))
        space = 2 * np.pi * (fx * xx + fy * yy) / s + rng.uniform(0, 2 * np.pi)
        time_ = (2 * np.pi * speed * t).astype(np.float32)
        grey += amp * np.sin(space)[None] * np.cos(time_)[:, None, None]
        grey += amp * np.cos(space)[None] * np.sin(time_)[:, None, None]
    grain = rng.normal(0.0, 4.0, size=(7, s, s)).astype(np.float32)  # a small bank, cycled
    grey += grain[np.arange(n) % 7]
    axis = np.arange(s)
    for _ in range(2):  # neutral distractor squares
        side = int(rng.integers(8, 15))
        level = np.float32(rng.choice([rng.uniform(20, 70), rng.uniform(185, 240)]))
        span = s - side
        x0 = _bounce(rng.uniform(0, span), rng.uniform(2, 9), t, span).astype(int)[:, None]
        y0 = _bounce(rng.uniform(0, span), rng.uniform(2, 9), t, span).astype(int)[:, None]
        in_x = (axis[None] >= x0) & (axis[None] < x0 + side)
        in_y = (axis[None] >= y0) & (axis[None] < y0 + side)
        grey = np.where(in_y[:, :, None] & in_x[:, None, :], level, grey)
    frames = np.repeat(np.clip(grey, 0, 255).astype(np.uint8)[..., None], 3, axis=3)
    a, q = spec.start_frame, spec.square
    frames[a : a + spec.needle_frames, spec.y : spec.y + q, spec.x : spec.x + q] = PALETTE[
        spec.colour
    ]
    return frames


def encode_mp4(
    frames: np.ndarray, path: str | Path, fps: int, keyframe_seconds: float, crf: int = 20
) -> None:
    """H.264 (yuv420p, no B-frames) with a keyframe every ``keyframe_seconds``, in one thread."""
    import av  # heavy optional import: only the generator encodes

    gop = str(max(1, round(keyframe_seconds * fps)))
    _, h, w, _ = frames.shape
    with av.open(str(path), "w") as container:
        stream = container.add_stream("libx264", rate=int(fps))
        stream.width, stream.height, stream.pix_fmt = w, h, "yuv420p"
        stream.options = {
            "preset": "ultrafast",
            "crf": str(int(crf)),
            "g": gop,
            "keyint_min": gop,
            "sc_threshold": "0",
            "threads": "1",
        }
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
