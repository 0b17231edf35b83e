"""Fixtures of the CLI tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def unloadable_model(tiny_qwen3_dir, tmp_path_factory) -> Path:
    """A model folder that passes the file checks but whose weights cannot load: whatever
    reaches the load fails, so a check that comes first shows by its own line."""
    folder = tmp_path_factory.mktemp("unloadable") / "model"
    shutil.copytree(tiny_qwen3_dir, folder)
    (folder / "model.safetensors").write_bytes(b"not safetensors")
    return folder
