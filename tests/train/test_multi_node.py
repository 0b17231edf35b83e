"""Multi-node start-up on 2 gloo ranks, each with its own view of the run folder: a node that
cannot see the run folder, or the checkpoint ``--resume`` continues, stops every rank with one
``ConfigError``; a shared folder starts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from gloo_ranks import run_two_ranks


def _checkpoint(run_dir: Path, step: int) -> None:
    ckpt = run_dir / f"checkpoint-{step}"
    ckpt.mkdir(parents=True)
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": step}))


@pytest.mark.ranks
def test_multi_node_start_up(tmp_path, shared_videos):
    """Before these checks, the node without the checkpoint stopped alone (``--resume: no
    checkpoint``) and the other waited for it in the next collective until the timeout."""
    scenarios = tmp_path / "scenarios"
    # blind: rank 1 sees the run folder (the token files, through a link) but not checkpoint-2
    blind = scenarios / "blind"
    _checkpoint(blind / "rank0", 2)
    (blind / "rank0" / ".nodes").mkdir()
    (blind / "rank1").mkdir()
    (blind / "rank1" / ".nodes").symlink_to(blind / "rank0" / ".nodes")
    # apart: rank 1's output_dir is a folder of its own (a local disk), with a copied checkpoint
    apart = scenarios / "apart"
    _checkpoint(apart / "rank0", 2)
    shutil.copytree(apart / "rank0", apart / "rank1")
    # shared: one folder (both views link to it), one checkpoint
    shared = scenarios / "shared"
    _checkpoint(shared / "folder", 2)
    for r in (0, 1):
        (shared / f"rank{r}").symlink_to(shared / "folder")

    worker = Path(__file__).with_name("shared_folder_worker.py")
    done = run_two_ranks(worker, str(scenarios), str(shared_videos), str(tmp_path), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for rank in ranks:
        assert rank["blind"].startswith("ConfigError: the ranks see different checkpoints")
        assert "rank 0 on" in rank["blind"] and "sees checkpoint-2" in rank["blind"]
        assert "rank 1 on" in rank["blind"] and "sees no checkpoint" in rank["blind"]
        assert rank["apart"].startswith("ConfigError: output_dir=")
        assert "is not one folder for every rank" in rank["apart"]
        assert "\n" not in rank["blind"] + rank["apart"]  # one line each
        assert rank["shared"] == "started"
    assert not list((shared / "folder" / ".nodes").iterdir())  # the tokens are cleaned up
