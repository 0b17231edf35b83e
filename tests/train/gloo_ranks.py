"""Start a test worker script on 2 gloo ranks (torchrun, CPU only), for the tests that check what
ranks agree on: the start-up data probes, the multi-node checks, the sharded lockstep."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

#: server-mode settings for a 2-rank run: the server waits fit under its ddp_timeout of 240 s
#: (ParaGRPOConfig refuses them else); ``--set`` overrides
SERVER_RANKS_WAITS = (
    "trainer.ddp_timeout=240", "trainer.vllm_server_request_timeout_s=100",
    "trainer.vllm_server_retries=1", "trainer.vllm_episode_deadline_s=120",
    "trainer.vllm_outage_budget_s=100",
)  # fmt: skip


def write_zero3_config(folder: Path) -> Path:
    """A DeepSpeed ZeRO-3 config for a 2-rank CPU run (the batch keys left to accelerate's
    ``auto``), written as ``folder/ds3.json``; its path."""
    import json

    ds3 = folder / "ds3.json"
    ds3.write_text(
        json.dumps(
            {
                "zero_optimization": {"stage": 3},
                "train_micro_batch_size_per_gpu": "auto",
                "gradient_accumulation_steps": "auto",
                "gradient_clipping": "auto",
            }
        )
    )
    return ds3


def gloo_threads() -> list[str]:
    """The names of this process's running gloo threads (a backend's run loops, its TCP device
    loop), read from /proc: each belongs to a process group backend still alive. A worker calls
    it once it has left the process group, where the answer must be none."""
    names = (task.read_text().strip() for task in Path("/proc/self/task").glob("*/comm"))
    return sorted(name for name in names if "gloo" in name)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_two_ranks(
    worker: Path, *argv: str, timeout: float, devices: str = ""
) -> subprocess.CompletedProcess:
    """``worker argv...`` on 2 ranks; the finished process, its output captured (not checked).
    ``devices``: the CUDA devices the ranks see (none by default).

    Past ``timeout`` torchrun is stopped with SIGTERM, which it passes on to its workers (they run
    in sessions of their own, so killing torchrun alone would leave them running), and
    ``subprocess.TimeoutExpired`` is raised."""
    env = dict(
        os.environ, CUDA_VISIBLE_DEVICES=devices, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore"
    )
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_port",
        str(free_port()),
        str(worker),
        *argv,
    ]
    with subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.terminate()  # torchrun stops its workers, then exits
            try:
                out, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
