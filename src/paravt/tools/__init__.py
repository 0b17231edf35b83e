"""Tools the agent can call. ``crop_video`` is the only one (docs/PROTOCOL.md §1, §3).

Names are imported lazily so that ``paravt.tools.schema`` (read by the turn parser and the
prompts) can be imported without the executor and torch behind it::

    from paravt.tools import CropConfig, WindowRequest, execute_windows
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "TOOL_NAME": "paravt.tools.schema",
    "TOOL_SCHEMA": "paravt.tools.schema",
    "BatchResult": "paravt.tools.results",
    "BatchStats": "paravt.tools.results",
    "CropConfig": "paravt.tools.results",
    "ToolResult": "paravt.tools.results",
    "WindowRequest": "paravt.tools.results",
    "execute_windows": "paravt.tools.batch",
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
]


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'paravt.tools' has no attribute {name!r}")
