"""The suite's own set-up: without ``../shared`` it runs on stand-ins, unless ``CI=true`` says
the real files must be there. Checked by running pytest on a copy of the test set-up in a folder
whose ``..`` has (or lacks) a ``shared/videos``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
PROBE = """
def test_video(video_path):
    print("VIDEO", video_path("torchcodec__h265_video.mp4"))
"""


def _run(tmp_path: Path, ci: str | None, with_shared: bool) -> subprocess.CompletedProcess:
    tests = tmp_path / "repo" / "tests"
    tests.mkdir(parents=True)
    for name in ("conftest.py", "media.py"):
        shutil.copy(TESTS / name, tests / name)
    (tests / "test_probe.py").write_text(PROBE)
    if with_shared:
        (tmp_path / "shared" / "videos").mkdir(parents=True)
        # the probe only resolves the name: an empty file stands for the real one
        (tmp_path / "shared" / "videos" / "torchcodec__h265_video.mp4").write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "tests"],
        cwd=tmp_path / "repo",
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_ci_without_shared_fails_with_a_message_that_names_the_folder(tmp_path):
    run = _run(tmp_path, ci="true", with_shared=False)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    assert f"{tmp_path / 'shared' / 'videos'} does not exist" in run.stderr


def test_without_shared_the_tests_run_on_stand_ins(tmp_path):
    run = _run(tmp_path, ci=None, with_shared=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "stand_in_videos" in run.stdout and "torchcodec__h265_video.mp4" in run.stdout


def test_ci_with_shared_uses_the_real_folder(tmp_path):
    run = _run(tmp_path, ci="true", with_shared=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"VIDEO {tmp_path / 'shared' / 'videos' / 'torchcodec__h265_video.mp4'}" in run.stdout
