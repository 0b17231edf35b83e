"""Ctrl-C in ``paravt train`` and ``paravt sft``: one line that says what was kept and the
exact command that goes on (exit 130). Before: ``paravt: aborted``, and a run stopped before its
first save left a folder that ``--resume`` answered with "no checkpoint".

Real runs in a subprocess of the console script, interrupted with SIGINT (what Ctrl-C sends);
the printed command is then run as printed.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

#: what a shell reports as 130: exit code 130, or the end by SIGINT itself. Under load (2 of 2
#: full-suite runs at load 3-7, none of 6 alone) this run, interrupted just after its config was
#: written, printed the right line and then ended by SIGINT (-2) instead of exiting 130; what
#: re-raises the signal after paravt returned 130 is not found yet (paravt installs no SIGINT
#: handler; CPython ends a process by SIGINT when it marks a KeyboardInterrupt unhandled)
SHELL_130 = (130, -signal.SIGINT)


def _interrupt_when(argv: list[str], ready, cwd: Path) -> tuple[int, str]:
    """Start ``paravt ARGV``, send SIGINT once ``ready()`` holds; ``(exit code, stderr)``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "paravt.cli.main", *argv], cwd=cwd,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and not ready():
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    return proc.returncode, stderr


def _last(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    return stderr.strip().splitlines()[-1]


def test_train_interrupted_before_its_first_save_says_there_is_nothing_to_resume(
    tmp_path, paravt_cli
):
    run = tmp_path / "run"
    argv = ["train", "--config", "cpu-smoke", "--set", f"output_dir={run}"]
    code, stderr = _interrupt_when(argv, lambda: (run / "config.json").is_file(), tmp_path)
    assert code in SHELL_130, stderr
    line = _last(stderr)
    assert line.startswith(f"paravt: interrupted: no checkpoint was saved in {run}"), line
    assert "nothing to resume" in line
    assert line.endswith(f"start it again with: paravt {shlex.join(argv)}"), line
    r = paravt_cli(*argv, "--resume")  # what a user tries first: said plainly, one line
    assert r.returncode == 2
    assert "nothing to resume; run the same command without --resume" in r.stderr


def test_sft_interrupted_after_a_save_continues_with_the_command_it_prints(tmp_path, paravt_cli):
    run = tmp_path / "run"
    argv = ["sft", "--config", "sft-smoke", "--set", f"output_dir={run}"]
    saved = run / "checkpoint-2" / "trainer_state.json"
    code, stderr = _interrupt_when(argv, saved.is_file, tmp_path)
    assert code == 130, stderr
    line = _last(stderr)
    assert f"the newest checkpoint is {run / 'checkpoint-2'} (step 2)" in line, line
    command = line.split("continue with: ", 1)[1]
    assert command == f"paravt {shlex.join(argv)} --resume"
    r = paravt_cli(*shlex.split(command)[1:], "--json")
    assert r.returncode == 0, r.stderr
    assert '"global_step": 4' in r.stdout and (run / "final").is_dir()
