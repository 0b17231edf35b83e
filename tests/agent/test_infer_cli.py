"""``paravt infer`` end to end on CPU: a tiny real model, a real video, every dispatch and evidence mode.

The tiny model's weights are random, so the first turn's tool call is pre-filled through
``engine.think_prefix`` (prompt text the turn continues); everything after it — the tool round,
window frames or sub-agent summaries, the forced answer — is the real pipeline.
"""

from __future__ import annotations

import io
import json

import pytest
from agent_helpers import call

from paravt.cli.main import main

SMALL = [
    "--frames",
    "3",
    "--max-turns",
    "1",
    "--set",
    "engine.max_new_tokens=4",
    "--set",
    "engine.forced_tokens_mcq=3",
    "--set",
    "engine.forced_tokens_oe=3",
    "--set",
    "engine.subagent_max_tokens=3",
    "--set",
    "engine.min_pixels=784",
    "--set",
    "engine.max_pixels=2048",
    "--set",
    "engine.crop.max_pixels=2048",
    "--set",
    "engine.crop.max_frames=2",
    "--set",
    "engine.think_prefix=<think>look</think>" + call(0, 2),
]


@pytest.mark.parametrize(
    "mode,evidence",
    [
        ("parallel", "frames"),
        ("parallel", "subagent"),
        ("sequential", "frames"),
        ("sequential", "subagent"),
        ("direct", "frames"),
    ],
)
def test_infer_runs_every_mode_and_returns_a_record(
    tiny_qwen3_dir, pancake, capsys, mode, evidence
):
    argv = [
        "infer",
        pancake,
        "-q",
        "What is cooked?",
        "--option",
        "A pancake",
        "--option",
        "Soup",
        "--model",
        str(tiny_qwen3_dir),
        "--mode",
        mode,
        "--evidence",
        evidence,
        "--json",
        *SMALL,
    ]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    rec, cfg = doc["record"], doc["config"]
    assert rec["status"] == "ok" and rec["prediction"] is not None
    assert (rec["mode"], rec["evidence"]) == (mode, evidence)
    assert cfg["engine"]["mode"] == mode and cfg["backend"]["model"] == str(tiny_qwen3_dir)
    assert rec["frames_k"] == 3 and rec["question_type"] == "mcq"
    if mode == "direct":
        assert len(rec["turns"]) == 1 and rec["calls"][0]["status"] == "ignored"
    else:
        assert len(rec["turns"]) == 2 and rec["turns"][1]["forced"]
        assert rec["calls"][0]["status"] == "ok"
        assert (rec["calls"][0]["summary"] is not None) == (evidence == "subagent")
        assert len(rec["subagents"]) == (1 if evidence == "subagent" else 0)


def test_infer_reads_questions_from_stdin_and_reports_errors(
    tiny_qwen3_dir, pancake, tmp_path, capsys, monkeypatch
):
    lines = [
        {"question": "What is cooked?", "options": ["A pancake", "Soup"]},
        {"id": "gone", "question": "Anything?", "video": str(tmp_path / "missing.mp4")},
    ]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(json.dumps(x) for x in lines) + "\n"))
    argv = [
        "infer",
        pancake,
        "-q",
        "-",
        "--model",
        str(tiny_qwen3_dir),
        "--json",
        "--trace",
        "--batch-size",
        "1",
        *SMALL,
    ]
    assert main(argv) == 1  # it ran, and one question failed (its record says why)
    out = capsys.readouterr()
    docs = [json.loads(line) for line in out.out.splitlines()]
    assert [d["record"]["id"] for d in docs] == ["q0", "gone"]
    assert docs[0]["record"]["status"] == "ok" and docs[0]["record"]["question_type"] == "mcq"
    assert docs[1]["record"]["status"] == "error" and docs[1]["record"]["question_type"] == "oe"
    assert "turn 0" in out.err and "answer:" in out.err  # the trace tree
    assert docs[0]["config"]["batch_size"] == 1


def test_infer_user_errors_exit_2(tiny_qwen3_dir, pancake, tmp_path, capsys, monkeypatch):
    assert (
        main(["infer", str(tmp_path / "none.mp4"), "-q", "Q?", "--model", str(tiny_qwen3_dir)]) == 2
    )
    assert "video not found" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO("not json\n"))
    assert main(["infer", pancake, "-q", "-", "--model", str(tiny_qwen3_dir)]) == 2
    assert "stdin line 1 is not JSON" in capsys.readouterr().err
    assert main(["infer", pancake, "-q", "Q?", "--set", "engine.mode=fast"]) == 2
    assert "mode" in capsys.readouterr().err
    assert main(["infer", pancake, "-q", "Q?", "--model", str(tmp_path / "no-model")]) == 2
    assert "model folder not found" in capsys.readouterr().err
    no_options = tmp_path / "user.txt"
    no_options.write_text("${question}")
    argv = ["infer", pancake, "-q", "Q?", "--option", "a", "--option", "b"]
    assert main([*argv, "--model", str(tiny_qwen3_dir), "--user-template", str(no_options)]) == 2
    assert "${options}" in capsys.readouterr().err
    no_options.write_text("${question} ${answer}")
    assert main([*argv, "--model", str(tiny_qwen3_dir), "--user-template", str(no_options)]) == 2
    assert "unknown field ${answer}" in capsys.readouterr().err


def test_infer_json_never_prints_the_api_key(
    tiny_qwen3_dir, pancake, tmp_path, capsys, monkeypatch
):
    lines = [
        {"id": "fine", "question": "Anything?"},
        {"id": "gone", "question": "Anything?", "video": str(tmp_path / "missing.mp4")},
    ]
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(json.dumps(x) + "\n" for x in lines)))
    argv = ["infer", pancake, "-q", "-", "--model", str(tiny_qwen3_dir), *SMALL]
    # one question fails (its video is missing: exit 1), and every record is printed
    assert main([*argv, "--json", "--set", "backend.api_key=sk-secret-123"]) == 1
    out = capsys.readouterr().out
    assert "sk-secret-123" not in out
    docs = [json.loads(x) for x in out.splitlines()]
    assert all(d["config"]["backend"]["api_key"] == "<redacted>" for d in docs)
    assert [d["record"]["status"] for d in docs] == ["ok", "error"]


def _two_calls_argv(tiny_qwen3_dir, pancake, *extra):
    """One tool round with a good call and a bad one (start after end), then the forced answer."""
    prefix = "<think>check the pan</think>" + call(0, 2) + call(9, 3)
    small = [
        a if not a.startswith("engine.think_prefix=") else f"engine.think_prefix={prefix}"
        for a in SMALL
    ]
    return [
        "infer",
        pancake,
        "-q",
        "What is cooked?",
        "--option",
        "A pancake",
        "--option",
        "Soup",
        "--model",
        str(tiny_qwen3_dir),
        *small,
        *extra,
    ]


def test_infer_prints_a_readable_episode_within_100_columns(tiny_qwen3_dir, pancake, capsys):
    assert main(_two_calls_argv(tiny_qwen3_dir, pancake)) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 100
    assert "\x1b[" not in out  # stdout is not a terminal: no colour codes
    assert "What is cooked?" in out and "A. A pancake" in out and "B. Soup" in out
    assert "Overview: K=3 frames at" in out
    assert "turn 0" in out and "forced answer" in out and "check the pan" in out
    ok_line = next(line for line in lines if "call 0" in line)
    assert "0.0–2.0 s" in ok_line and "ok" in ok_line and "2 frames" in ok_line
    bad_line = next(line for line in lines if "call 1" in line)
    assert "error" in bad_line and "asked 9–3" in bad_line
    assert "Final answer:" in out and "forced" in out
    assert "Time:" in out and "Tokens:" in out


def test_infer_quiet_prints_the_answer_alone(tiny_qwen3_dir, pancake, capsys):
    assert main(_two_calls_argv(tiny_qwen3_dir, pancake, "--quiet")) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 1 and "turn 0" not in out
    assert main(_two_calls_argv(tiny_qwen3_dir, pancake, "--quiet", "--json")) == 2
    assert "--quiet and --json" in capsys.readouterr().err


def test_infer_sheet_draws_the_episode(tiny_qwen3_dir, pancake, tmp_path, capsys):
    from PIL import Image

    out = tmp_path / "pics" / "episode.png"
    assert main(_two_calls_argv(tiny_qwen3_dir, pancake, "--sheet", str(out), "--json")) == 0
    doc = json.loads(capsys.readouterr().out)  # --json stays one document on stdout
    assert doc["record"]["calls"][0]["status"] == "ok"
    img = Image.open(out)
    assert img.size[0] == 1600 and img.size[1] > 200
    assert len(img.convert("RGB").getcolors(maxcolors=1 << 20)) > 50


def test_infer_sheet_to_an_unwritable_path_exits_2_before_the_model_loads(
    pancake, tmp_path, capsys
):
    a_file = tmp_path / "notes.txt"
    a_file.write_text("not a folder")
    argv = ["infer", pancake, "-q", "Q?", "--model", str(tmp_path / "no-model")]
    # the model folder does not exist either: the sheet error must come first
    assert main([*argv, "--sheet", str(a_file / "episode.png")]) == 2
    err = capsys.readouterr().err
    assert "--sheet" in err and "cannot write" in err and "model folder" not in err
    assert main([*argv, "--sheet", str(tmp_path / "episode.jpg")]) == 2
    assert "PNG" in capsys.readouterr().err


@pytest.mark.parametrize(
    "name,tool_prompt",
    [
        ("qwen2.5-vl-instruct", "paravt"),
        ("qwen3-vl-instruct", "native"),
        ("qwen3-vl-thinking", "native"),
    ],
)
def test_infer_on_tiny_models_with_real_qwen_templates(
    real_tiny_dir, pancake, capsys, name, tool_prompt
):
    """`paravt infer --model DIR` end to end on each real template: the pre-filled first turn
    makes two parallel calls (a scripted turn the random weights continue), so the template's
    tool turn, its generation prompt and the forced answer all run on the real model."""
    two_calls = "<think>look</think>" + call(0, 2) + call(4, 6)
    small = SMALL[:-2]  # all but the one-call think_prefix (its "--set" and value)
    assert small[-1] != "--set" and SMALL[-1].startswith("engine.think_prefix=")
    argv = [
        *("infer", pancake, "-q", "What is cooked?", "--option", "A pancake", "--option", "Soup"),
        *("--model", str(real_tiny_dir(name)), "--json", *small),
        *("--set", "engine.think_prefix=" + two_calls),
    ]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    rec = doc["record"]
    assert rec["status"] == "ok", rec["error"]
    assert doc["config"]["engine"]["tool_prompt"] == "auto"
    assert [c["status"] for c in rec["calls"] if c["turn"] == 0] == ["ok", "ok"]
    assert rec["turns"][0]["tool_tokens"] > 0 and rec["turns"][1]["forced"]
    assert rec["turns"][0]["text"].count("<think>") == 1  # the Thinking prompt's own one, merged
    assert (rec["tools"] is not None) == (tool_prompt == "native")
    assert rec["tokens"]["image"] > 0
