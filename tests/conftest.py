"""Shared fixtures: tiny real models, the real test videos, and generated long videos.

Everything is built once per test session and offline: tiny random Qwen-VL models with
``paravt.testing.tiny``, long videos with Debian's ffmpeg.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

# Small models on 2 cores are ~50x slower with torch's default thread count.
os.environ.setdefault("OMP_NUM_THREADS", "1")

SHARED_VIDEOS = Path(__file__).resolve().parents[1].parent / "shared" / "videos"


def pytest_collection_modifyitems(config, items):
    """Skip ``gpu`` tests cleanly when no CUDA device is present."""
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except Exception:  # pragma: no cover
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (gpu marker)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_videos() -> Path:
    """The folder of real test videos (../shared/videos beside the checkout)."""
    if not SHARED_VIDEOS.is_dir():
        pytest.skip(f"real test videos not found at {SHARED_VIDEOS} (the shared/ folder beside the repo)")
    return SHARED_VIDEOS


@pytest.fixture(scope="session")
def video_path(shared_videos):
    """``video_path("torchcodec__testsrc2.mp4")`` → absolute path of a real test video."""

    def _get(name: str) -> Path:
        p = shared_videos / name
        if not p.is_file():
            pytest.skip(f"test video {name} missing from {shared_videos}")
        return p

    return _get


def _ffmpeg() -> str:
    exe = shutil.which("ffmpeg")
    if exe is None:
        pytest.skip("ffmpeg not installed (apt-get install ffmpeg)")
    return exe


def generate_video(
    path: Path, seconds: float, size: str = "320x180", fps: int = 30, gop: int | None = None
) -> Path:
    """Encode an ffmpeg testsrc2 clip (burnt-in clock) with x264; ``gop=None`` keeps x264's default."""
    cmd = [
        _ffmpeg(), "-y", "-loglevel", "error",
        "-f", "lavfi", "-i", f"testsrc2=size={size}:rate={fps}:duration={seconds}",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
    ]
    if gop is not None:
        cmd += ["-g", str(gop)]
    subprocess.run(cmd + [str(path)], check=True)
    return path


@pytest.fixture(scope="session")
def long_video(tmp_path_factory) -> Path:
    """A 3-minute 320x180 @30 fps H.264 video (x264 default keyframe interval), built once."""
    out = tmp_path_factory.mktemp("videos") / "long_3min.mp4"
    return generate_video(out, seconds=180)


def _tiny(tmp_path_factory, arch: str) -> Path:
    from paravt.testing.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp(f"tiny-{arch}"), arch=arch)


@pytest.fixture(scope="session")
def tiny_qwen3_dir(tmp_path_factory) -> Path:
    """A tiny random Qwen3-VL model folder (model + processor + chat template)."""
    return _tiny(tmp_path_factory, "qwen3-vl")


@pytest.fixture(scope="session")
def tiny_qwen25_dir(tmp_path_factory) -> Path:
    """A tiny random Qwen2.5-VL model folder (model + processor + chat template)."""
    return _tiny(tmp_path_factory, "qwen2.5-vl")
