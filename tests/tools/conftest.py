"""Small generated videos for the tools-room tests (real files, encoded once per session)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest


def encode(path: Path, seconds: float, size: str, fps: int, gop: int | None = None, faststart: bool = False) -> Path:
    exe = shutil.which("ffmpeg")
    if exe is None:
        pytest.skip("ffmpeg not installed")
    cmd = [exe, "-y", "-loglevel", "error", "-f", "lavfi",
           "-i", f"testsrc2=size={size}:rate={fps}:duration={seconds}",
           "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p"]
    if gop is not None:
        cmd += ["-g", str(gop)]
    if faststart:
        cmd += ["-movflags", "+faststart"]
    subprocess.run(cmd + [str(path)], check=True)
    return path


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("video-room")


@pytest.fixture(scope="session")
def gop_video(media_dir) -> Path:
    """12 s, 160x90 @ 30 fps, a keyframe every second (gop 30)."""
    return encode(media_dir / "gop30_12s.mp4", 12, "160x90", 30, gop=30)


@pytest.fixture(scope="session")
def minutes_video(media_dir) -> Path:
    """2 minutes, 96x54 @ 10 fps, x264's default keyframe interval: for MM:SS windows."""
    return encode(media_dir / "two_minutes.mp4", 120, "96x54", 10)


@pytest.fixture(scope="session")
def faststart_video(media_dir) -> Path:
    """6 s, 160x90 @ 25 fps with the MP4 index at the front (so a truncated copy still opens)."""
    return encode(media_dir / "faststart_6s.mp4", 6, "160x90", 25, gop=25, faststart=True)


@pytest.fixture(scope="session")
def bad_files(media_dir, gop_video, faststart_video) -> dict[str, Path]:
    """Inputs that are not usable videos, each made for real."""
    out = {}
    out["missing"] = media_dir / "does_not_exist.mp4"
    empty = media_dir / "empty.mp4"
    empty.write_bytes(b"")
    out["empty"] = empty
    text = media_dir / "notes.mp4"
    text.write_text("this is a text file, not a video\n" * 20)
    out["text"] = text
    data = gop_video.read_bytes()
    trunc = media_dir / "truncated.mp4"  # moov atom is at the end: gone after truncation
    trunc.write_bytes(data[: len(data) // 2])
    out["truncated"] = trunc
    fdata = faststart_video.read_bytes()
    ftrunc = media_dir / "truncated_faststart.mp4"  # index survives, media data is cut
    ftrunc.write_bytes(fdata[: int(len(fdata) * 0.6)])
    out["truncated_faststart"] = ftrunc
    exe = shutil.which("ffmpeg")
    audio = media_dir / "tone.wav"
    subprocess.run([exe, "-y", "-loglevel", "error", "-f", "lavfi", "-i", "sine=duration=1", str(audio)], check=True)
    out["audio_only"] = audio
    out["directory"] = media_dir
    return out
