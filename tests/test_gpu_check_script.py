"""``benchmarks/gpu_check.sh`` (the device checks, run on a lent GPU): valid bash, and without a
CUDA device it refuses in one line, exit 3, before installing anything. The checks themselves
(``benchmarks/gpu_check.py``) need a GPU; here only that it refuses the same way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"


def test_the_script_is_valid_bash():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without CUDA")
def test_it_refuses_without_cuda_in_one_line_before_installing(tmp_path):
    env = dict(os.environ, PYTHON=sys.executable, OUT=str(tmp_path))
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env)
    assert done.returncode == 3
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no CUDA device" in lines[0]
    assert not list(tmp_path.iterdir())  # nothing installed, nothing written


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal without CUDA")
def test_the_checks_refuse_the_same_way(tmp_path):
    out = tmp_path / "gpu_check.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 3 and "no CUDA device" in done.stderr and not out.exists()
