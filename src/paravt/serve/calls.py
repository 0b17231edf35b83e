"""The served tools' execution, free of any MCP type: arguments in, a ``ToolReply`` out.

One code path with the episode engine: a ``crop_video`` call is a ``WindowRequest`` run by
``paravt.tools.execute_windows`` under the engine's window settings (``CropSettings``: frame
choice, argument rules, decoding) with the engine's budget resize on the decode lanes
(``agent.vision.budget_resizer``, then ``at_budget`` as ``EpisodeEngine._window_items`` does), so
the frames are the ones the engine hands a model for that window. Only what the engine does not
have is added here: the path check (``paths``), an optional ``max_frames`` argument bounded by
the server's limit, PNG encoding and the per-call byte limit.
"""

from __future__ import annotations

import dataclasses
import io
import logging
from dataclasses import dataclass, field
from typing import Any

from paravt.serve.config import ServeToolsConfig
from paravt.serve.paths import PathRefused, VideoRoots
from paravt.tools.schema import TOOL_SCHEMA

__all__: list[str] = []  # nothing here is for the other rooms

logger = logging.getLogger(__name__)

#: Arguments the server reads itself; the rest go to the tool's own argument rules.
SERVER_ARGUMENTS = ("video_path", "max_frames")


@dataclass
class ToolReply:
    """One call's outcome: ``text`` (what a model reads), PNG ``images`` in time order,
    ``data`` (the same facts as JSON) or, when ``error`` is set, a tool error with its ``kind``."""

    text: str
    images: list[bytes] = field(default_factory=list)
    data: dict = field(default_factory=dict)
    error: bool = False
    kind: str | None = None


def encode_png(frame: Any) -> bytes:
    """A uint8 ``[3, H, W]`` frame as PNG bytes (lossless: the pixels decode back unchanged)."""
    from PIL import Image

    array = frame.permute(1, 2, 0).contiguous().numpy()
    buf = io.BytesIO()
    Image.fromarray(array, "RGB").save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def crop_video_schema(cfg: ServeToolsConfig) -> dict:
    """The engine's crop_video parameters, with ``video_path`` read (over MCP it names the
    video) and an optional ``max_frames`` capped at the server's limit."""
    params = TOOL_SCHEMA["function"]["parameters"]
    props = dict(params["properties"])
    props["video_path"] = {
        "type": "string",
        "description": "Path of the video, relative to one of the server's video roots (or "
        "absolute inside one).",
    }
    props["max_frames"] = {
        "type": "integer",
        "minimum": cfg.crop.min_frames,
        "maximum": cfg.crop.max_frames,
        "description": f"At most this many frames (default and limit {cfg.crop.max_frames}).",
    }
    return {"type": "object", "properties": props, "required": list(params["required"])}


VIDEO_INFO_SCHEMA = {
    "type": "object",
    "properties": {
        "video_path": {
            "type": "string",
            "description": "Path of the video, relative to one of the server's video roots.",
        }
    },
    "required": ["video_path"],
}


class ToolService:
    """The tools of one server: ``crop_video`` and ``video_info`` on videos under the roots.

    Thread-safe: each call opens its own ``VideoSource`` (``execute_windows`` does), so calls
    may run on several threads at once."""

    def __init__(self, cfg: ServeToolsConfig):
        self.cfg = cfg
        self.roots = VideoRoots.of(cfg.video_roots)
        from paravt.agent.vision import budget_resizer  # loads torch and the kernels

        crop = cfg.crop
        self._resize = budget_resizer(cfg.arch, crop.min_pixels, crop.max_pixels)

    def _video(self, arguments: Any, tool: str) -> str | ToolReply:
        """The real path of the call's video, or the tool error that refuses it."""
        if not isinstance(arguments, dict):
            return ToolReply(f"{tool}: arguments must be an object", error=True, kind="arguments")
        try:
            return self.roots.resolve(arguments.get("video_path"))
        except PathRefused as e:
            return ToolReply(str(e), error=True, kind=e.kind)

    def _max_frames(self, arguments: dict) -> int:
        crop = self.cfg.crop
        if "max_frames" not in arguments:
            return crop.max_frames
        n = arguments["max_frames"]
        if (
            isinstance(n, bool)
            or not isinstance(n, int)
            or not (crop.min_frames <= n <= crop.max_frames)
        ):
            raise ValueError(
                f"crop_video: max_frames={n!r} is not allowed. Give a whole number from "
                f"{crop.min_frames} to {crop.max_frames} (this server's limit per call), or "
                "leave it out."
            )
        return n

    def crop_video(self, arguments: Any) -> ToolReply:
        """The frames of one window (see module docstring), or a tool error saying what to fix."""
        from paravt.agent.vision import at_budget
        from paravt.tools.batch import execute_windows
        from paravt.tools.results import WindowRequest

        video = self._video(arguments, "crop_video")
        if isinstance(video, ToolReply):
            return video
        try:
            max_frames = self._max_frames(arguments)
        except ValueError as e:
            return ToolReply(str(e), error=True, kind="max_frames")
        crop = dataclasses.replace(self.cfg.crop, max_frames=max_frames)
        window = {k: v for k, v in arguments.items() if k not in SERVER_ARGUMENTS}
        batch = execute_windows([WindowRequest(video, window)], crop, resize=self._resize)
        res = batch.results[0]
        if not res.ok or res.clip is None:
            return ToolReply(res.message(), error=True, kind=res.error_kind)
        frames = [res.clip.frame(i) for i in range(len(res.times))]
        if frames and frames[0].device.type != "cpu":
            # crop.device: cuda (NVDEC): PNGs are made on the host, so the frames go there
            # first and take the CPU's budget resize, the same pixels as a CPU decode gets
            frames = [f.cpu() for f in frames]
        frames = at_budget(frames, self.cfg.arch, crop.min_pixels, crop.max_pixels)
        images = [encode_png(f) for f in frames]
        size = sum(len(b) for b in images)
        if size > self.cfg.max_bytes_per_call:
            return ToolReply(
                f"crop_video: the {len(images)} frames of this window are {size} bytes as PNG, "
                f"over this server's limit of {self.cfg.max_bytes_per_call} bytes per call. Ask "
                "for fewer frames (max_frames) or a shorter window.",
                error=True,
                kind="too_large",
            )
        times = [round(float(t), 3) for t in res.times]
        lines = [res.message(), "Frame times (seconds): " + ", ".join(f"{t:.2f}" for t in times)]
        lines += [f"Note: {w}" for w in res.warnings]
        data = {
            "start": res.start,
            "end": res.end,
            "times": times,
            "failed": list(res.failed),
            "warnings": list(res.warnings),
            "size": [int(frames[0].shape[1]), int(frames[0].shape[2])] if frames else None,
        }
        return ToolReply("\n".join(lines), images=images, data=data)

    def video_info(self, arguments: Any) -> ToolReply:
        """Duration, frame rate, size and frame count of one video, as the decoder reads them."""
        from paravt.video.errors import VideoError
        from paravt.video.source import VideoSource

        video = self._video(arguments, "video_info")
        if isinstance(video, ToolReply):
            return video
        try:
            src = VideoSource(video, num_threads=1)
        except VideoError as e:
            return ToolReply(f"video_info: {e}", error=True, kind=getattr(e, "kind", "video"))
        try:
            m = src.meta
            data = {
                "duration": round(m.duration, 3),
                "fps": round(m.average_fps, 3),
                "width": m.width,
                "height": m.height,
                "num_frames": m.num_frames,
                "codec": m.codec,
            }
        finally:
            src.close()
        text = (
            f"{data['duration']:.1f} seconds, {data['fps']:.2f} fps, {data['width']}x"
            f"{data['height']}, {data['num_frames']} frames"
        )
        return ToolReply(text, data=data)
