"""`paravt eval` as a user runs it: killed with SIGKILL and resumed, sharded and merged, re-scored.

The killed run is a real subprocess of the CLI with the scripted backend (a JSON script file
paced like a slow model) over real videos; the runs after it go through the same console-script
`main` in this process.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from paravt.cli.main import main as paravt_main
from paravt.config import load_config
from paravt.eval.config import EvalConfig
from paravt.eval.results import read_results
from paravt.eval.runner import run_eval

SPANS = [
    ("CHA1", 0.5, 1.5),
    ("CHA2", 8.0, 12.0),
    ("CHA3", 1.0, 2.0),
    ("CHA1", 0.0, 1.0),
    ("CHA2", 2.0, 6.0),
    ("CHA3", 3.0, 5.0),
    ("CHAGONE", 1.0, 2.0),
    ("CHA2", 0.0, 3.0),
]
PRED = ["0.5 - 1.5", "9 to 10", "[1, 3]", "0:00 - 0:01", "garbage", "3-4", "1-2", "[0, 1.5]"]


@pytest.fixture
def setup(tmp_path, real):
    data = tmp_path / "data"
    data.mkdir()
    lines = [f"{v} {s} {e}##query number {i}." for i, (v, s, e) in enumerate(SPANS)]
    (data / "charades_sta_test.txt").write_text("\n".join(lines) + "\n")
    videos = tmp_path / "videos"
    videos.mkdir()
    for name, key in (("CHA1", "testsrc"), ("CHA2", "pancake"), ("CHA3", "bunny")):
        (videos / f"{name}.mp4").symlink_to(real[key])
    turns = {
        f"{v}#{i + 1}": [f"<answer>{p}</answer>"]
        for i, ((v, _, _), p) in enumerate(zip(SPANS, PRED, strict=True))
    }
    turns["CHA2#5"] = [{"error": "HTTP 502 Bad Gateway"}]  # a backend failure on one sample
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": turns, "delay_s": 0.5}))
    args = [
        "--benchmark",
        "charades",
        "--data",
        str(data),
        "--videos",
        str(videos),
        "--backend",
        "scripted",
        "--script",
        str(script),
        "--frames",
        "2",
        "--set",
        "engine.max_turns=1",
        "--batch-size",
        "2",
    ]
    return tmp_path, args


def _config(args: list[str], out) -> EvalConfig:
    flags = dict(zip(args[0::2], args[1::2], strict=True))
    return load_config(
        EvalConfig,
        None,
        ["engine.max_turns=1"],
        base={
            "benchmark": "charades",
            "data": flags["--data"],
            "videos": flags["--videos"],
            "script": flags["--script"],
            "out": str(out),
            "batch_size": 2,
            "progress": False,
            "engine": {"frames": 2},
        },
    )


def _comparable(summary: dict) -> dict:
    """A summary without what legitimately differs between two runs (time, output folder)."""
    out = {k: v for k, v in summary.items() if k != "timing"}
    proto = dict(out["protocol"])
    proto["eval_config"] = {
        k: v for k, v in proto["eval_config"].items() if k not in ("out", "resume", "progress")
    }
    proto.pop("script")  # same file content, recorded with its path
    out["protocol"] = proto
    return out


def _running_until(args: list[str], out, rows: int) -> subprocess.Popen:
    """``paravt eval ARGS --out OUT`` in a subprocess (stderr piped), once its results file holds
    ``rows`` lines; it must still be running then."""
    results = out / "results.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "paravt.cli.main", "eval", *args, "--out", str(out)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    deadline = time.time() + 180
    while time.time() < deadline and proc.poll() is None:
        if results.is_file() and results.read_text().count("\n") >= rows:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be stopped"
    return proc


def test_sigkill_then_resume_gives_every_sample_once_and_the_same_summary(setup, paravt_cli):
    tmp, args = setup
    out = tmp / "killed"
    results = out / "results.jsonl"
    proc = _running_until(args, out, rows=3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    done_before = len(read_results(results))
    assert 3 <= done_before < len(SPANS)
    with open(results, "a") as fh:  # and as if the kill had landed mid-line
        fh.write('{"id": "CHA3#6", "index": 5, "sta')

    again = paravt_cli("eval", *args, "--out", out)
    assert again.returncode == 2 and "--resume" in again.stderr

    changed = paravt_cli("eval", *args, "--out", out, "--resume", "--frames", "3")
    assert changed.returncode == 2 and "engine.frames" in changed.stderr

    resumed = paravt_cli("eval", *args, "--out", out, "--resume", "--json")
    assert resumed.returncode == 0, resumed.stderr
    ids = [r.id for r in read_results(results, tolerate_torn_tail=False)]
    assert sorted(ids) == sorted(f"{v}#{i + 1}" for i, (v, _, _) in enumerate(SPANS))
    assert len(ids) == len(set(ids)) == len(SPANS)

    reference = run_eval(_config(args, tmp / "uninterrupted"))
    summary = json.loads(resumed.stdout)
    assert _comparable(summary) == _comparable(reference)
    assert summary["metrics"]["errors"] == 2
    assert summary["metrics"]["error_kinds"] == {"backend": 1, "video_missing": 1}
    assert summary["complete"] is True and summary["duplicates"] == 0


def test_shards_merge_and_rescore(setup, capsys):
    tmp, args = setup
    assert paravt_main(["eval", "run", *args, "--out", str(tmp / "full"), "--json"]) == 0
    full = json.loads(capsys.readouterr().out)
    assert full["protocol"]["backend"] == "scripted" and full["protocol"]["frames"] == 2
    shard_dir = tmp / "shards"
    for i in range(3):
        cfg = _config(args, shard_dir)
        cfg.shard = f"{i}/3"
        run_eval(cfg)
    assigned = [
        json.loads((shard_dir / f"run-{i:02d}-of-03.json").read_text())["assigned"]
        for i in range(3)
    ]
    flat = [x for a in assigned for x in a]
    assert len(flat) == len(set(flat)) == len(SPANS)  # disjoint and covering

    assert (
        paravt_main(["eval", "merge", str(shard_dir), "--out", str(tmp / "merged"), "--json"]) == 0
    )
    merged = json.loads(capsys.readouterr().out)
    assert merged["metrics"] == full["metrics"] and merged["complete"] and not merged["duplicates"]
    assert len(read_results(tmp / "merged" / "results.jsonl")) == len(SPANS)

    # the same shard twice
    assert (
        paravt_main(
            [
                "eval",
                "merge",
                str(shard_dir),
                str(shard_dir / "run-01-of-03.json"),
                "--out",
                str(tmp / "m2"),
            ]
        )
        == 2
    )
    assert "given twice" in capsys.readouterr().err

    # a shard that lost a result
    shard1 = shard_dir / "results-01-of-03.jsonl"
    kept = shard1.read_text().splitlines()[1:]
    shard1.write_text("\n".join(kept) + "\n")
    assert paravt_main(["eval", "merge", str(shard_dir), "--out", str(tmp / "m3")]) == 2
    assert "have no result" in capsys.readouterr().err
    assert (
        paravt_main(
            ["eval", "merge", str(shard_dir), "--out", str(tmp / "m4"), "--allow-missing", "--json"]
        )
        == 0
    )
    partial = json.loads(capsys.readouterr().out)
    assert partial["metrics"]["n"] == len(SPANS) and len(partial["missing"]) == 1
    assert partial["metrics"]["error_kinds"]["missing"] == 1 and not partial["complete"]

    # re-scoring the merged predictions without a model
    assert (
        paravt_main(
            ["eval", "score", str(tmp / "merged" / "results.jsonl"), "--variant", "paper", "--json"]
        )
        == 0
    )
    rescored = json.loads(capsys.readouterr().out)
    assert rescored["metrics"]["variants"] == full["metrics"]["variants"]
    assert rescored["headline"] == full["metrics"]["variants"]["paper"]


def test_cli_user_errors_exit_2(setup, capsys):
    tmp, args = setup
    assert paravt_main(["eval", "--benchmark", "charades", "--out", str(tmp / "o")]) == 2
    assert "--data is required" in capsys.readouterr().err
    assert (
        paravt_main(
            [
                "eval",
                "--benchmark",
                "charades",
                "--data",
                str(tmp / "nope"),
                "--videos",
                str(tmp),
                "--out",
                str(tmp / "o"),
                "--backend",
                "scripted",
            ]
        )
        == 2
    )
    assert "--script" in capsys.readouterr().err
    bad = [*args[:4], "--videos", str(tmp), "--out", str(tmp / "o2")]
    bad[3] = str(tmp / "missing_annotations")
    assert paravt_main(["eval", *bad]) == 2
    assert "missing_annotations" in capsys.readouterr().err


def test_ctrl_c_keeps_every_scored_row_and_names_the_command_that_continues(setup, paravt_cli):
    """Ctrl-C printed only ``paravt: aborted``; now it says what was kept and the exact command
    that continues, and that command finishes the run with every sample once."""
    tmp, args = setup
    out = tmp / "interrupted"
    results = out / "results.jsonl"
    proc = _running_until(args, out, rows=2)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    kept = len(read_results(results))
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"paravt: interrupted: {kept} of {len(SPANS)} questions are scored")
    assert f"kept in {results}; continue with: paravt eval " in last, last
    assert "Traceback" not in stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and len(summary["missing"]) == len(SPANS) - kept

    command = last.split("continue with: ", 1)[1]
    words = shlex.split(command)
    assert words[0] == "paravt" and words[-1] == "--resume"
    resumed = paravt_cli(*words[1:])
    assert resumed.returncode == 0, resumed.stderr
    ids = [r.id for r in read_results(results, tolerate_torn_tail=False)]
    assert len(ids) == len(set(ids)) == len(SPANS)


def test_a_wrong_video_folder_exits_1_says_why_and_continues(setup, paravt_cli):
    """Every row ``video_missing`` (a wrong ``--videos``) exited 0; now exit 1 with the reason
    naming the folder, every row kept, and ``--resume --retry-errors`` with the right folder
    runs those rows again. A second annotation file under ``--data`` is named, not read."""
    tmp, args = setup
    (tmp / "data" / "notes.txt").write_text("not a split\n")
    wrong = tmp / "no-videos"
    wrong.mkdir()
    flags = list(args)
    right = flags[flags.index("--videos") + 1]
    flags[flags.index("--videos") + 1] = str(wrong)
    out = tmp / "wrong"
    r = paravt_cli("eval", *flags, "--out", out)
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "no question could be scored" in last and f"--videos {wrong}" in last
    assert f"kept in {out / 'results.jsonl'}" in last and "--resume --retry-errors" in last
    assert "read charades_sta_test.txt; not read: notes.txt" in r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"]["error_kinds"] == {"video_missing": len(SPANS)}
    assert "no question could be scored" in summary["nothing_scored"]
    assert summary["ignored_files"] == [str(tmp / "data" / "notes.txt")]

    words = shlex.split(last.split(" with: ", 1)[1])
    words[words.index("--videos") + 1] = right
    again = paravt_cli(*words[1:], "--json")
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["metrics"]["error_kinds"] == {"backend": 1, "video_missing": 1}
    assert "nothing_scored" not in summary and summary["complete"]
