"""Video engine: open once, sample overview and window frames by presentation time.

See docs/INTERFACES.md (Video) and docs/PROTOCOL.md §2-§3. Decoding is torchcodec's
``VideoDecoder``; the frame table comes from its packet scan, so times map to frames without
decoding.
"""

import importlib

# Names are imported on first use (as ``paravt.tools`` does), so that ``paravt.video.config``, which
# the engine's and the commands' configs extend, loads without torch and torchcodec behind it.
_EXPORTS = {
    "InvalidWindowError": "paravt.video.errors",
    "NoVideoStreamError": "paravt.video.errors",
    "VideoDecodeError": "paravt.video.errors",
    "VideoError": "paravt.video.errors",
    "VideoOpenError": "paravt.video.errors",
    "Frames": "paravt.video.frames",
    "FrameTable": "paravt.video.meta",
    "VideoMeta": "paravt.video.meta",
    "OVERVIEW_MODES": "paravt.video.config",
    "VideoSource": "paravt.video.source",
}

__all__ = [
    "OVERVIEW_MODES",
    "FrameTable",
    "Frames",
    "InvalidWindowError",
    "NoVideoStreamError",
    "VideoDecodeError",
    "VideoError",
    "VideoMeta",
    "VideoOpenError",
    "VideoSource",
]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'paravt.video' has no attribute {name!r}")
