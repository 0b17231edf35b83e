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


#: what differs between two runs of the same episodes besides their content: seconds
_TIMING_KEYS = ("generate_s", "preprocess_s", "decode_s", "total_s")


def record_view(rec) -> dict:
    """Everything an episode record holds but its timings: the turns' texts, every call, the
    messages, the token stream with its mask and logprobs, the images' sources, times and grids,
    the sub-agents' records — for comparing two runs token for token."""
    out = rec.to_dict(tokens=True)
    out.pop("timings")
    for turn in out["turns"]:
        for key in _TIMING_KEYS:
            turn.pop(key, None)
    out["images"] = [(im.source, im.time, tuple(im.grid_thw or ())) for im in rec.stream.images]
    out["subagents"] = [record_view(sub) for sub in rec.subagents]
    return out
