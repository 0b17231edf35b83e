"""Where a command writes is checked before anything heavy runs: one line, exit 2.

``paravt infer --sheet /proc/ep.png`` ran the whole episode and then ended in ``internal error:
FileNotFoundError`` (exit 1); ``train`` and ``sft`` with ``output_dir=/proc/run`` did the same
after their start. ``/proc`` is a real folder no file can be made in, even by root (whom every
permission check lets through), and a model whose weights cannot load shows that the check came
first: a load would fail with another line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from paravt.destinations import check_file_destination, check_folder_destination
from paravt.errors import UserError

pytestmark = pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")


def _one_line(r) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip() and "warning:" not in ln]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    return lines[0]


def test_an_infer_sheet_nobody_can_write_is_refused_before_the_model(
    gop_video, unloadable_model, paravt_cli
):
    r = paravt_cli("infer", gop_video, "-q", "What?", "--model", unloadable_model,
                   "--sheet", "/proc/ep.png")  # fmt: skip
    assert r.returncode == 2
    line = _one_line(r)
    assert "--sheet /proc/ep.png" in line and "writable" in line


def test_frames_sheet_and_eval_out_are_refused_before_their_work(
    gop_video, unloadable_model, tmp_path, paravt_cli
):
    r = paravt_cli("frames", gop_video, "--sheet", "/proc/sheet.png")
    assert r.returncode == 2 and "--sheet /proc/sheet.png" in _one_line(r)
    row = {"id": "q", "video": str(gop_video), "question": "What?", "answer": "x"}
    (tmp_path / "eval.jsonl").write_text(json.dumps(row) + "\n")
    r = paravt_cli("eval", "--benchmark", "jsonl", "--data", tmp_path, "--videos", tmp_path,
                   "--out", "/proc/run", "--model", unloadable_model)  # fmt: skip
    assert r.returncode == 2 and "--out /proc/run" in _one_line(r)


@pytest.mark.parametrize("command, recipe", [("train", "cpu-smoke"), ("sft", "sft-smoke")])
def test_a_run_folder_nobody_can_write_is_refused_at_once(command, recipe, paravt_cli):
    r = paravt_cli(command, "--config", recipe, "--set", "output_dir=/proc/run")
    assert r.returncode == 2
    assert "output_dir=/proc/run" in _one_line(r)


def test_the_check_makes_a_file_and_leaves_nothing(tmp_path):
    assert (
        check_file_destination(tmp_path / "new" / "a.png", "--sheet ") == tmp_path / "new" / "a.png"
    )
    assert check_folder_destination(tmp_path / "a" / "b", "--out ") == tmp_path / "a" / "b"
    assert list(tmp_path.iterdir()) == []  # no scratch file, no folder made
    (tmp_path / "f").write_text("x")
    with pytest.raises(UserError, match="is a file"):
        check_folder_destination(tmp_path / "f", "--out ")
    with pytest.raises(UserError, match="is a folder"):
        check_file_destination(tmp_path, "--sheet ")
