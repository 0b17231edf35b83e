"""A small toy-task split, generated once per session with the real generator (a few seconds)."""

from __future__ import annotations

import pytest

from paravt.toy.generate import make_toy_task
from paravt.toy.task import ToyTaskConfig


@pytest.fixture(scope="session")
def toy_eval(tmp_path_factory):
    """Six videos of the eval split (seed 7: every duration appears) and their manifest."""
    out = tmp_path_factory.mktemp("toy_eval")
    cfg = ToyTaskConfig(out=str(out), n=6, seed=7, split="eval", visibility_videos=0)
    manifest = make_toy_task(cfg)
    return out, cfg, manifest
