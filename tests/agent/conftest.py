"""Fixtures of the agent room: tiny processors, small engine configs, the real test videos."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def q3_processor(tiny_qwen3_dir):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(str(tiny_qwen3_dir))


@pytest.fixture(scope="session")
def pancake(video_path):
    """Real footage, 10.4 s, 426x240."""
    return str(video_path("decord__flipping_a_pancake.mkv"))


@pytest.fixture(scope="session")
def bunny(video_path):
    """VP9 WebM, 5.0 s, 320x180."""
    return str(video_path("mediabunny__trim-buck-bunny.webm"))
