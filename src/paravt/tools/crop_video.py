"""The crop_video tool: its schema for the model and the batched executor behind it.

PROTOCOL §1/§3. The ``video_path`` argument is part of the schema because the paper's prompts
name it, but it is never opened: each ``WindowRequest`` carries the episode's own video.
"""

from __future__ import annotations

from paravt.tools.batch import execute_windows, window_plan
from paravt.tools.results import BatchResult, BatchStats, CropConfig, ToolResult, WindowRequest

TOOL_NAME = "crop_video"

TOOL_SCHEMA: dict = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Look closer at one time window of the video. Returns frames sampled uniformly from "
            "start_time to end_time (about 1 per second, 2 to 16 frames), each with its "
            "timestamp in seconds. Call it several times in one turn to inspect several windows "
            "in parallel."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "video_path": {
                    "type": "string",
                    "description": "Path of the video being asked about.",
                },
                "start_time": {
                    "type": "number",
                    "description": "Window start, in seconds from the beginning of the video.",
                },
                "end_time": {
                    "type": "number",
                    "description": "Window end, in seconds; greater than start_time.",
                },
            },
            "required": ["video_path", "start_time", "end_time"],
        },
    },
}

__all__ = [
    "TOOL_NAME",
    "TOOL_SCHEMA",
    "BatchResult",
    "BatchStats",
    "CropConfig",
    "ToolResult",
    "WindowRequest",
    "execute_windows",
    "window_plan",
]
