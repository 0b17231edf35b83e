"""`paravt eval --sheets N [--sheets-of errors]`: episode sheets written next to the results."""

from __future__ import annotations

import json

from PIL import Image

from paravt.backends.scripted import ScriptedBackend
from paravt.cli.main import main
from paravt.config import load_config
from paravt.eval.config import EvalConfig
from paravt.eval.runner import run_eval

CALL = (
    '<tool_call>{"name": "crop_video", "arguments": {"video_path": "v", "start_time": 0,'
    ' "end_time": 2}}</tool_call>'
)
SCRIPT = {
    "001-1": ["<think>Look closer.</think>" + CALL, "<answer>B</answer>"],
    "001-2": ["<answer>Coloured test bars</answer>"],
    "002-1": ["<answer>A</answer>"],  # wrong: the gold is D
}


def _run(videomme, tmp_path, **over):
    data, videos = videomme
    base = {
        "benchmark": "videomme",
        "data": str(data),
        "videos": str(videos),
        "out": str(tmp_path / "out"),
        "progress": False,
        "engine": {"frames": 2, "max_turns": 1},
        **over,
    }
    return run_eval(load_config(EvalConfig, None, [], base=base), backend=ScriptedBackend(SCRIPT))


def test_sheets_of_the_first_episodes(videomme, tmp_path):
    summary = _run(videomme, tmp_path, sheets=2)
    sheets = sorted((tmp_path / "out" / "sheets").glob("*.png"))
    assert [p.name for p in sheets] == ["00000-001-1.png", "00001-001-2.png"]
    assert summary["sheets"] == [str(p) for p in sheets]
    img = Image.open(sheets[0])
    assert img.size[0] == 1600 and len(img.convert("RGB").getcolors(1 << 20)) > 20


def test_sheets_of_failures_only(videomme, tmp_path):
    summary = _run(videomme, tmp_path, sheets=5, sheets_of="errors")
    names = [p.name for p in (tmp_path / "out" / "sheets").glob("*.png")]
    # 002-1 is answered wrongly; 003-1 failed before any episode ran (its video is missing),
    # so there is nothing to draw for it
    assert names == ["00002-002-1.png"] and len(summary["sheets"]) == 1


def test_sheets_flags_reach_the_config_and_bad_values_exit_2(videomme, tmp_path, capsys):
    data, videos = videomme
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    args = [
        "eval",
        "--benchmark",
        "videomme",
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
        "--set",
        "progress=false",
        "--out",
        str(tmp_path / "o"),
    ]
    assert main([*args, "--sheets", "1", "--sheets-of", "errors", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["protocol"]["eval_config"]["sheets"] == 1
    assert [p.name for p in (tmp_path / "o" / "sheets").glob("*.png")] == ["00002-002-1.png"]
    assert main([*args, "--sheets", "-1"]) == 2
    assert "sheets must be non-negative" in capsys.readouterr().err
