"""``paravt train`` on 2 gloo ranks (plain DDP) leaves no process group backend running once the
command returns: one still running is torn down while the interpreter finalizes, and a rank
that aborts there (exit -6, after its work is done) fails the whole launch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gloo_ranks import run_two_ranks

WORKER = Path(__file__).with_name("cli_rank_worker.py")


@pytest.mark.ranks
def test_paravt_train_leaves_no_gloo_backend_running(tmp_path, shared_videos):
    """Before ``paravt.train.launch.teardown`` released the default arguments that captured the
    world group (``deepspeed.comm.torch.TorchBackend.barrier``'s, where DeepSpeed is installed, as
    in CI; ``torch.distributed.nn.functional``'s), its gloo backend was still running here on
    both ranks."""
    done = run_two_ranks(
        WORKER,
        str(tmp_path),
        "train",
        "--config",
        "cpu-smoke",
        "--set",
        f"output_dir={tmp_path / 'run'}",
        "--set",
        "data.path=builtin:smoke",
        "--set",
        f"data.video_root={shared_videos}",
        "--set",
        "trainer.max_steps=1",
        "--set",
        "engine.max_turns=1",
        "--set",
        "trainer.per_device_train_batch_size=2",
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    for rank in (0, 1):
        left = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert left == {"exit_code": 0, "gloo_threads_after_leaving": []}, left
