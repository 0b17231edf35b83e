"""Helpers shared by the agent tests (a plain module: tests/ has no packages)."""

from __future__ import annotations

from paravt.agent.config import CropSettings, EngineConfig


def small_config(**kw) -> EngineConfig:
    """Few frames, tiny pixel budgets: fast on 2 CPU cores, same code paths as full size."""
    base = {
        "frames": 4,
        "min_pixels": 784,
        "max_pixels": 4096,
        "max_new_tokens": 1024,
        "crop": CropSettings(min_pixels=784, max_pixels=4096, max_frames=4),
    }
    base.update(kw)
    return EngineConfig(**base)


def call(start, end, video="video") -> str:
    args = f'"video_path": "{video}", "start_time": {start}, "end_time": {end}'
    return '<tool_call>{"name": "crop_video", "arguments": {' + args + "}}</tool_call>"
