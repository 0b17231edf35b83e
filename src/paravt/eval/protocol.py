"""The protocol block of an evaluation summary: everything needed to reproduce the numbers.

A published score is only comparable with another when model, prompt, frames, pixels, turns,
caps, decoding and scoring rule all match; this module gathers them (with a hash of every prompt
file the engine reads, so an edited prompt is visible) into one JSON-able dict.
"""

from __future__ import annotations

import dataclasses
import hashlib
import platform
from importlib import metadata, resources
from pathlib import Path

import paravt
from paravt.eval.config import EvalConfig, redacted

__all__ = ["describe"]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def prompt_hashes(system_prompt: str | None, user_template: str | None = None) -> dict:
    """sha256 of each packaged prompt file, of the custom system prompt and user template, and of
    them all together."""
    files: dict[str, str] = {}
    try:
        folder = resources.files("paravt.agent").joinpath("prompts")
        for entry in sorted(folder.iterdir(), key=lambda p: p.name):
            if entry.is_file():
                files[entry.name] = _sha256(entry.read_bytes())
    except (ModuleNotFoundError, FileNotFoundError, NotADirectoryError):
        pass
    out: dict = {"files": files}
    if system_prompt:
        p = Path(system_prompt)
        out["system_prompt_file"] = str(p)
        out["system_prompt_sha256"] = _sha256(p.read_bytes()) if p.is_file() else None
    if user_template:
        p = Path(user_template)
        out["user_template_file"] = str(p)
        out["user_template_sha256"] = _sha256(p.read_bytes()) if p.is_file() else None
    combined = "\n".join(f"{k}:{v}" for k, v in sorted(files.items()))
    combined += f"\nsystem_prompt:{out.get('system_prompt_sha256')}"
    if user_template:  # only then: the hash of a run without one stays what it was
        combined += f"\nuser_template:{out.get('user_template_sha256')}"
    out["combined_sha256"] = _sha256(combined.encode())
    return out


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def describe(cfg: EvalConfig, judge_description: dict, backend_label: str | None = None) -> dict:
    """The complete protocol of a run (config recorded with secrets redacted).

    ``backend_label`` names a backend handed in by the caller (e.g. the trainer's policy, or a
    test's scripted backend) instead of the one the config describes.
    """
    backend = backend_label or cfg.backend_name

    eng = cfg.engine
    script = None
    if cfg.script:
        p = Path(cfg.script)
        script = {"file": str(p), "sha256": _sha256(p.read_bytes()) if p.is_file() else None}
    return {
        "paravt_version": paravt.__version__,
        "model": cfg.backend.model if backend in ("hf", "openai") else None,
        "backend": backend,
        "base_url": cfg.backend.base_url if backend == "openai" else None,
        "script": script,
        "prompts": prompt_hashes(eng.system_prompt, eng.user_template),
        "mode": eng.mode,
        "evidence": eng.evidence,
        "frames": eng.frames,
        "overview_sampling": eng.overview_sampling,
        "timestamps": eng.timestamps,
        "pixels": {
            "overview": [eng.min_pixels, eng.max_pixels],
            "window": [eng.crop.min_pixels, eng.crop.max_pixels],
        },
        "turns": {"max_turns": eng.max_turns, "max_parallel": eng.max_parallel},
        "caps": {
            "max_new_tokens": eng.max_new_tokens,
            "forced_tokens": {
                "mcq": eng.forced_tokens_mcq,
                "tvg": eng.forced_tokens_tvg,
                "oe": eng.forced_tokens_oe,
            },
            "subagent_max_tokens": eng.subagent_max_tokens,
            "window_frames": [eng.crop.min_frames, eng.crop.max_frames],
            "window_fps": eng.crop.fps,
        },
        "decoding": {
            "temperature": eng.temperature,
            "top_p": eng.top_p,
            "greedy": eng.temperature == 0.0,
        },
        "subtitles": cfg.subtitles,
        "scoring": {"variant": cfg.variant, "open_ended_judge": judge_description},
        "engine_config": dataclasses.asdict(eng),
        "eval_config": redacted(cfg),
        "software": {
            "python": platform.python_version(),
            "torch": _version("torch"),
            "transformers": _version("transformers"),
            "torchcodec": _version("torchcodec"),
        },
    }
