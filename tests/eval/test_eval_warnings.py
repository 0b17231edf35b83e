"""The warnings an episode record carries (frames decoded after damage in the video, frames that
could not be decoded) reached only ``episodes.jsonl``; eval now keeps them on each result line,
lists them in ``summary.json`` and says so on stderr, and ``paravt infer`` shows them.

Real files: ``decord__corrupted.mp4`` (frame 28's NAL length overwritten) beside a clean video,
the scripted backend for eval and the tiny model for infer.
"""

from __future__ import annotations

import json

from paravt.eval.results import read_results

CORRUPT, CLEAN = "decord__corrupted.mp4", "torchcodec__testsrc2.mp4"


def test_eval_reports_the_damage_its_episodes_carry(tmp_path, video_path, paravt_cli):
    rows = [
        {"id": "bad", "video": str(video_path(CORRUPT)), "question": "What?", "answer": "x"},
        {"id": "good", "video": str(video_path(CLEAN)), "question": "What?", "answer": "x"},
    ]
    (tmp_path / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "script.json").write_text(json.dumps(["<answer>x</answer>"]))
    out = tmp_path / "run"
    r = paravt_cli("eval", "--benchmark", "jsonl", "--data", tmp_path / "eval.jsonl",
                   "--videos", tmp_path, "--backend", "scripted", "--script",
                   tmp_path / "script.json", "--frames", "32", "--out", out)  # fmt: skip
    assert r.returncode == 0, r.stderr
    by_id = {row.id: row for row in read_results(out / "results.jsonl")}
    damage = [w for w in by_id["bad"].warnings if "damage" in w]
    assert damage and not by_id["good"].warnings
    summary = json.loads((out / "summary.json").read_text())
    assert summary["warnings"] == [{"id": "bad", "warnings": by_id["bad"].warnings}]
    line = next(ln for ln in r.stderr.splitlines() if "carry warnings" in ln)
    assert line.startswith("paravt: warning: 1 of 2 questions carry warnings")
    assert "bad: " in line and str(out / "summary.json") in line


def test_eval_reports_the_damage_ffmpeg_reported(tmp_path, paravt_cli):
    """A video whose decode logs FFmpeg errors (it claims x264 core 142, ``media.OLD_X264_KINDS``:
    no damaged packet for the scan to find) carries the damage warning, FFmpeg's line quoted, on
    its result line, in ``summary.json`` and on stderr."""
    import media
    import pytest

    missing = media.build(tmp_path, media.OLD_X264_KINDS)
    if "old_x264_444.mp4" in missing:
        pytest.skip(missing["old_x264_444.mp4"])
    row = {"id": "old", "video": "old_x264_444.mp4", "question": "What?", "answer": "x"}
    (tmp_path / "eval.jsonl").write_text(json.dumps(row) + "\n")
    (tmp_path / "script.json").write_text(json.dumps(["<answer>x</answer>"]))
    out = tmp_path / "run"
    r = paravt_cli("eval", "--benchmark", "jsonl", "--data", tmp_path / "eval.jsonl",
                   "--videos", tmp_path, "--backend", "scripted", "--script",
                   tmp_path / "script.json", "--frames", "16", "--out", out)  # fmt: skip
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    [flagged] = summary["warnings"]
    assert any("decoded after damage" in w and "(FFmpeg: " in w for w in flagged["warnings"])
    assert "1 of 1 questions carry warnings" in r.stderr


def test_infer_shows_the_damage(video_path, tiny_qwen3_dir, paravt_cli):
    r = paravt_cli("infer", video_path(CORRUPT), "-q", "What?", "--model", tiny_qwen3_dir,
                   "--frames", "32", "--max-turns", "1", "--quiet",
                   "--set", "engine.max_new_tokens=8", "--set", "engine.max_pixels=3136",
                   "--set", "engine.min_pixels=784")  # fmt: skip
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stderr.splitlines() if "damage" in ln)
    assert line.startswith("paravt: warning: q0: ")


def test_the_episode_view_lists_the_warnings():
    from rich.console import Console

    from paravt.agent.view import episode_view
    from paravt.schema.episodes import CallRecord, EpisodeRecord

    rec = EpisodeRecord(
        id="q0", video="v.mp4", question="What?", question_type="oe", options=None, gold=None,
        mode="parallel", evidence="frames", prediction="x", answer_source="answer_tag",
        warnings=["3 frames (3.40s to 4.60s) were decoded after damage in the file"],
        calls=[CallRecord(0, 1, "crop_video", {}, "ok", warnings=["times clamped"])],
    )  # fmt: skip
    console = Console(width=100, record=True)
    console.print(episode_view(rec))
    text = console.export_text()
    assert "warning: 3 frames (3.40s to 4.60s) were decoded after damage" in text
    assert "warning: call 0.1: times clamped" in text
