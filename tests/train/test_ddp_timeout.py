"""``trainer.ddp_timeout`` bounds a rank's wait in a collective on CPU (gloo) too: paravt forms
the gloo group with it before HF would form one with torch's 30-minute default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gloo_ranks import free_port, run_two_ranks

from paravt.errors import ConfigError
from paravt.train.launch.process_group import join_process_group

DDP_TIMEOUT = 15  # seconds; torch's default, which HF left on CPU, is 1800


@pytest.mark.ranks
@pytest.mark.slow
def test_a_rank_waiting_for_a_missing_peer_fails_after_ddp_timeout_on_cpu(tmp_path):
    """Rank 1 never enters the barrier rank 0 waits in (it stays up, bounded, until rank 0 has
    recorded its end). Rank 0's wait ends with gloo's timeout error naming ``ddp_timeout``.
    Before, rank 0 waited until rank 1's process went away: with ``ddp_timeout=20`` rank 0's
    barrier ended after 92 s, when rank 1 exited, with "Connection closed by peer"; with rank 1
    lingering this test's launch ran into the subprocess timeout. That timeout bounds a hang."""
    worker = Path(__file__).with_name("ddp_timeout_worker.py")
    done = run_two_ranks(worker, str(tmp_path), str(DDP_TIMEOUT), timeout=240)
    assert done.returncode != 0, done.stdout[-2000:]  # rank 0 raised
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    # accelerate adopted the group formed before it: one group of 2, gloo, on both ranks
    assert [(r["rank"], r["world"], r["backend"]) for r in ranks] == [
        (0, 2, "gloo"),
        (1, 2, "gloo"),
    ]
    error = ranks[0]["error"]
    assert error is not None, ranks[0]
    assert f"{DDP_TIMEOUT * 1000}ms" in error["message"], error


@pytest.fixture
def launched(monkeypatch):
    """The environment torchrun gives rank 0 of 2 (no peer: a group formed here would fail)."""
    for key, value in {
        "RANK": "0",
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("ACCELERATE_USE_CPU", raising=False)


@pytest.mark.parametrize(
    "trainer",
    [
        pytest.param({"use_cpu": False}, id="gpu-path"),
        pytest.param({"use_cpu": "true", "ddp_backend": "nccl"}, id="another-backend"),
    ],
)
def test_the_group_is_left_to_hf_off_the_gloo_path(launched, trainer):
    """On HF's GPU path (it passes ``ddp_timeout`` itself) or with a backend other than gloo,
    paravt forms no group (a 1 s timeout makes a wrongly formed one fail fast here)."""
    import torch.distributed as dist
    from transformers import TrainingArguments

    assert not join_process_group({**trainer, "ddp_timeout": 1}, TrainingArguments)
    assert not dist.is_initialized()


def test_a_single_process_forms_no_group(monkeypatch):
    import torch.distributed as dist
    from transformers import TrainingArguments

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert not join_process_group({"use_cpu": True, "ddp_timeout": 1}, TrainingArguments)
    assert not dist.is_initialized()


def test_a_bad_ddp_timeout_is_named(launched):
    from transformers import TrainingArguments

    with pytest.raises(ConfigError, match=r"trainer\.ddp_timeout"):
        join_process_group({"use_cpu": True, "ddp_timeout": "soon"}, TrainingArguments)


def test_a_launch_whose_rendezvous_port_is_held_is_one_line_naming_the_port(tmp_path):
    """A shell that still holds a launch's variables (a torchrun job's, or TRL's colocated vLLM
    set them in the process that starts paravt) and a port another process listens on: HF's
    rendezvous fails as it sets up devices. Before, that was 'internal error: DistNetworkError'
    (exit 1); now a ConfigError (exit 2) that names MASTER_PORT and the fix."""
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        env = {**os.environ, "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1"}
        env |= {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1"}
        cmd = [sys.executable, "-m", "paravt.cli.main", "train", "--config", "cpu-smoke"]
        cmd += ["--set", f"output_dir={tmp_path / 'run'}", "--set", "trainer.max_steps=1"]
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr and f"MASTER_PORT={port}" in lines[-1], lines[-3:]
    assert "--master_port" in lines[-1]
