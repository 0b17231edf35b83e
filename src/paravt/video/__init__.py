"""Video engine: open once, sample overview and window frames by presentation time.

See docs/INTERFACES.md (Video) and docs/PROTOCOL.md §2-§3. Decoding is torchcodec's
``VideoDecoder``; the frame table comes from its packet scan, so times map to frames without
decoding.
"""

from paravt.video.errors import (
    InvalidWindowError,
    NoVideoStreamError,
    VideoDecodeError,
    VideoError,
    VideoOpenError,
)
from paravt.video.frames import Frames
from paravt.video.meta import FrameTable, VideoMeta
from paravt.video.source import OVERVIEW_MODES, VideoSource

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
