"""The crop_video schema (docs/PROTOCOL.md §1): the one contract between model text and tool.

Why a module of its own, with no imports: the turn parser needs the parameter order to read
positional calls such as ``crop_video("v.mp4", 10, 20)``, and the prompts need the schema to show
the model. Both sit below the executor (which pulls in torch), so the schema lives in this leaf
and everything else reads it from here.
"""

from __future__ import annotations

__all__ = ["TOOL_NAME", "TOOL_PARAMETERS", "TOOL_SCHEMA"]

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


def parameter_order(schema: dict) -> tuple[str, ...]:
    """The parameter names of a function schema in signature order (positional arguments map
    onto them in this order)."""
    return tuple(schema["function"]["parameters"]["properties"])


#: Tool name → its parameters in signature order, for every tool the model may call.
TOOL_PARAMETERS: dict[str, tuple[str, ...]] = {TOOL_NAME: parameter_order(TOOL_SCHEMA)}
