"""`paravt train` as a process: SIGKILL + --resume keeps the metrics continuous; two ranks (gloo)
under torchrun and under accelerate launch."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest


def _env():
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONWARNINGS"] = "ignore"
    return env


def _rows(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


def test_sigkill_after_checkpoint_then_resume_keeps_metrics_continuous(
    tmp_path, shared_videos, paravt_cli
):
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "paravt.cli.main",
        "train",
        "--config",
        "cpu-smoke",
        "--set",
        f"output_dir={run_dir}",
        "--set",
        "data.path=builtin:smoke",
        "--set",
        f"data.video_root={shared_videos}",
        "--set",
        "trainer.max_steps=4",
        "--set",
        "trainer.save_steps=2",
        "--set",
        "engine.max_turns=1",
        "--set",
        "trainer.per_device_train_batch_size=2",
    ]
    proc = subprocess.Popen(
        cmd, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    deadline = time.time() + 240
    try:
        # Kill once step 3 is logged: the checkpoint is at step 2, so row 3 must be cut and redone.
        while time.time() < deadline and proc.poll() is None:
            if (run_dir / "checkpoint-2" / "trainer_state.json").is_file() and any(
                r["step"] == 3 for r in _rows(run_dir / "metrics.jsonl")
            ):
                break
            time.sleep(0.05)
        assert proc.poll() is None, (
            f"run ended before it could be killed: {proc.stderr.read()[-2000:]}"
        )
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not (run_dir / "checkpoint-4").exists()
    killed_step3 = sorted(
        e["prompt_id"] for e in _rows(run_dir / "episodes" / "rank0.jsonl") if e["step"] == 3
    )
    assert [r["step"] for r in _rows(run_dir / "metrics.jsonl")] == [1, 2, 3]

    # the resumed run goes through the same console-script main, in this process
    done = paravt_cli(*cmd[3:], "--resume", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["global_step"] == 4 and summary["resumed_from"].endswith("checkpoint-2")
    steps = [r["step"] for r in _rows(run_dir / "metrics.jsonl")]
    assert steps == [1, 2, 3, 4]  # continuous: no duplicate step 3, no gap
    resumed_step3 = sorted(
        e["prompt_id"] for e in _rows(run_dir / "episodes" / "rank0.jsonl") if e["step"] == 3
    )
    assert resumed_step3 == killed_step3  # the data position was restored
    assert (run_dir / "checkpoint-4" / "model.safetensors").is_file()
    assert json.loads((run_dir / "config.json").read_text())["resumed_from"].endswith(
        "checkpoint-2"
    )


def _free_port() -> int:
    """A port nobody listens on now: several engineers run these tests on one machine."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _launcher(name: str, port: int) -> list[str] | None:
    """The 2-process CPU command prefix of a launcher (gloo); None when it is not installed.

    ``accelerate launch --cpu --num_processes 2`` starts ONE process; ``--multi_gpu`` is the flag
    that spawns the workers, and without a visible GPU they take the gloo backend."""
    exe = shutil.which(name)
    if exe is None:
        return None
    if name == "torchrun":
        return [exe, "--nproc_per_node", "2", "--master_port", str(port)]
    return [
        exe,
        "launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(port),
    ]


@pytest.mark.ranks
@pytest.mark.slow
@pytest.mark.parametrize("launcher", ["torchrun", "accelerate"])
def test_two_ranks_gloo_same_k_for_a_prompt_on_both_ranks(tmp_path, shared_videos, launcher):
    prefix = _launcher(launcher, _free_port())
    if prefix is None:
        pytest.skip(f"{launcher} not on PATH")
    run_dir = tmp_path / "ddp"
    # 3 prompts × 2 generations over 2 ranks: the middle prompt's group is split across the ranks.
    cmd = [
        *prefix,
        "-m",
        "paravt.cli.main",
        "train",
        "--config",
        "cpu-smoke",
        "--set",
        f"output_dir={run_dir}",
        "--set",
        "data.path=builtin:smoke",
        "--set",
        f"data.video_root={shared_videos}",
        "--set",
        "trainer.per_device_train_batch_size=3",
        "--set",
        "trainer.max_steps=2",
        "--set",
        "engine.max_turns=1",
        "--json",
    ]
    env = _env()
    env["CUDA_VISIBLE_DEVICES"] = ""  # the CPU (gloo) path even on a machine with a GPU
    done = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=400, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout)["global_step"] == 2  # one JSON result: rank 0 only prints
    ks = defaultdict(set)
    ranks = defaultdict(set)
    for rank in (0, 1):
        for e in _rows(run_dir / "episodes" / f"rank{rank}.jsonl"):
            assert e["rank"] == rank
            ks[(e["step"], e["prompt_id"])].add(e["k"])
            ranks[(e["step"], e["prompt_id"])].add(rank)
    assert ks and all(len(v) == 1 for v in ks.values())
    assert any(len(r) == 2 for r in ranks.values()), "no group was split across ranks"
    assert [r["step"] for r in _rows(run_dir / "metrics.jsonl")] == [1, 2]
