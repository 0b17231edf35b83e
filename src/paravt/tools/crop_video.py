"""The crop_video tool: its schema for the model (defined in ``tools.schema``) and the batched
executor behind it.

docs/PROTOCOL.md §1/§3. The ``video_path`` argument is part of the schema because the paper's
prompts name it, but it is never opened: each ``WindowRequest`` carries the episode's own video.
"""

from __future__ import annotations

from paravt.tools.batch import execute_windows, window_plan
from paravt.tools.results import BatchResult, BatchStats, CropConfig, ToolResult, WindowRequest
from paravt.tools.schema import TOOL_NAME, TOOL_SCHEMA

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
