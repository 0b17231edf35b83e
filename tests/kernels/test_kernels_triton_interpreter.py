"""The Triton kernels, run by Triton's interpreter on CPU, agree with the torch reference.

The interpreter must be enabled before triton is imported, so the cases run in a subprocess with
``TRITON_INTERPRET=1`` in its environment (a test-harness setting, not a product knob).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def interpreter_results(shared_videos):
    env = dict(os.environ, TRITON_INTERPRET="1", OMP_NUM_THREADS="1")
    proc = subprocess.run(
        [sys.executable, str(HERE / "triton_interp_cases.py"), str(shared_videos)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert len(results) == 8, proc.stdout
    return {r["name"]: r for r in results}


def test_every_output_value_is_written_once_with_the_reference_layout(interpreter_results):
    for name, r in interpreter_results.items():
        assert r["rows"] == r["ref_rows"], name
        assert r["float32"]["unwritten"] == 0, name


def test_within_one_uint8_step_of_the_reference(interpreter_results):
    for name, r in interpreter_results.items():
        d = r["float32"]
        print(f"{name}: max {d['max_steps']} step, {d['share_differing']:.4%} differ")
        assert d["max_steps"] <= 1, name
        assert d["share_differing"] < 0.005, name


def test_odd_and_single_frame_windows_are_padded_like_the_reference(interpreter_results):
    # layout errors (a wrong pad slot) would show as many-step differences, not 1-step rounding
    for name in (
        "random qwen3 video",
        "random qwen2.5 video 1 frame",
        "real h265 128x128 qwen3 video (odd)",
        "real mixed windows qwen2.5 video",
    ):
        assert interpreter_results[name]["float32"]["max_steps"] <= 1


def test_bf16_output_is_written_directly(interpreter_results):
    r = interpreter_results["real mixed windows qwen2.5 video"]["bfloat16"]
    assert r["unwritten"] == 0
    assert r["max_steps"] <= 1
