"""Tools the agent can call. ``crop_video`` is the only one (PROTOCOL §1, §3)."""

from paravt.tools.crop_video import (
    TOOL_NAME,
    TOOL_SCHEMA,
    BatchResult,
    BatchStats,
    CropConfig,
    ToolResult,
    WindowRequest,
    execute_windows,
)

__all__ = [
    "TOOL_NAME",
    "TOOL_SCHEMA",
    "BatchResult",
    "BatchStats",
    "CropConfig",
    "ToolResult",
    "WindowRequest",
    "execute_windows",
]
