"""Reference defects that paravt fixes (docs/PROTOCOL.md §7), each pinned by a behaviour that the
defect would break, on the real engine over real videos (a scripted backend plays the model).

- §7.5, the prompt cache: the reference cached the prompt per video path, so a second question on
  the same video was asked as the first one;
- §7.6, video access: an ``ffprobe`` subprocess per call, and a fallback decoder that reads a
  whole video into memory.
"""

from __future__ import annotations

import subprocess

import pytest
from agent_helpers import call, small_config

from paravt.agent.engine import EpisodeEngine
from paravt.backends.scripted import ScriptedBackend
from paravt.schema.episodes import EpisodeInput


def _user_text(rec) -> str:
    return rec.messages[1]["content"][-1]["text"]


def test_each_question_on_one_video_gets_its_own_prompt(pancake):
    """Three questions on one video, in one run and one batch, with the same K: each episode is
    asked its own question with its own options and instruction (the reference asked the first
    question three times). The overview frames are shared, and the video is opened once."""
    questions = [
        EpisodeInput("q1", pancake, "What does the man flip?", ["A pancake", "A coin"], "mcq"),
        EpisodeInput("q2", pancake, "When does he flip it?", None, "tvg"),
        EpisodeInput("q3", pancake, "What colour is the pan?", ["Black", "Red", "Blue"], "mcq"),
    ]
    engine = EpisodeEngine(ScriptedBackend(["<answer>A</answer>"]), small_config())
    records = engine.run(questions)
    texts = [_user_text(r) for r in records]
    assert "What does the man flip?" in texts[0] and "A. A pancake\nB. A coin" in texts[0]
    assert "When does he flip it?" in texts[1] and "A. " not in texts[1]
    assert "What colour is the pan?" in texts[2] and "C. Blue" in texts[2]
    assert len(set(texts)) == 3
    assert [r.overview_times for r in records[1:]] == [records[0].overview_times] * 2
    assert engine.video_opens == {pancake: 1}
    # a second run on the same engine builds its prompts again
    [again] = engine.run([EpisodeInput("q4", pancake, "Is it raining?", None, "oe")])
    assert "Is it raining?" in _user_text(again) and "flip" not in _user_text(again)


def test_tool_calls_spawn_no_process_and_open_the_video_once(gop_video, monkeypatch):
    """Three parallel calls, then two more in a second round: no subprocess (the reference ran
    ffprobe for every call), one open of the video for the whole episode."""
    spawned = []

    def no_process(*args, **kwargs):
        spawned.append(args[0] if args else kwargs.get("args"))
        raise AssertionError(f"a subprocess was started: {spawned[-1]!r}")

    monkeypatch.setattr(subprocess, "Popen", no_process)
    video = str(gop_video)
    script = [
        "<think>Three places at once.</think>" + call(0, 2) + call(5, 7) + call(9, 11),
        "<think>Two more.</think>" + call(2, 3) + call(7, 8),
        "<answer>A</answer>",
    ]
    engine = EpisodeEngine(ScriptedBackend(script), small_config(max_turns=2))
    [rec] = engine.run([EpisodeInput("e", video, "What is shown?", ["a clock", "a dog"])])
    assert rec.status == "ok", rec.error
    assert rec.tool_counts.executed_ok == 5 and rec.tool_counts.errors == 0
    assert spawned == []
    assert engine.video_opens == {video: 1}


def test_a_window_decodes_its_own_frames_never_the_whole_video(gop_video):
    """A 2 s window of a 12 s video (360 frames, a keyframe every 30) decodes from the keyframe
    before it, not the video from its start: the reference's fallback read every frame."""
    video = str(gop_video)
    script = ["<think>Look near the end.</think>" + call(9, 11), "<answer>A</answer>"]
    engine = EpisodeEngine(ScriptedBackend(script), small_config(max_turns=1))
    [rec] = engine.run([EpisodeInput("e", video, "What is shown?", ["a clock", "a dog"])])
    assert rec.tool_counts.executed_ok == 1
    [stats] = engine.tool_stats
    assert stats.frames_returned == len(rec.calls[0].times) >= 2
    # 9-11 s with a keyframe each second: two or three GOPs of 30 frames, never the 270 before
    assert 0 < stats.frames_decoded <= 3 * 30


@pytest.mark.parametrize("kind", ["truncated", "text", "empty"])
def test_an_unreadable_video_is_a_typed_episode_error_not_a_fallback(bad_files, pancake, kind):
    """A video the decoder cannot read ends its episode with ``error_kind="video"``; nothing
    retries it with a whole-video reader, and the other episode of the batch is untouched."""
    script = ["<answer>A</answer>"]
    engine = EpisodeEngine(ScriptedBackend(script), small_config())
    bad = EpisodeInput("bad", str(bad_files[kind]), "What is shown?", ["a", "b"])
    good = EpisodeInput("good", pancake, "What is shown?", ["a", "b"])
    records = engine.run([bad, good])
    assert records[0].status == "error" and records[0].error_kind == "video"
    assert records[0].prediction is None
    assert records[1].status == "ok" and records[1].prediction == "A"
