"""Each benchmark end to end on real videos: native annotations → adapter → episode engine with a
scripted backend (known predictions) → scored JSON lines → summary with known numbers.

Frames are kept at 2 per overview so the real decoding stays cheap on CI cores.
"""

from __future__ import annotations

import json
import logging

import pytest

from paravt.agent.backend import BackendBase
from paravt.backends.scripted import ScriptedBackend
from paravt.config import load_config
from paravt.eval.config import EvalConfig
from paravt.eval.results import read_results
from paravt.eval.runner import run_eval
from paravt.schema.episodes import Generation


def A(text: str) -> list[str]:
    """A one-turn episode that answers ``text``."""
    return [f"<think>Looking at the frames.</think><answer>{text}</answer>"]


def run(split, fixture, tmp_path, script, **over):
    data, videos = fixture
    base = {
        "benchmark": split,
        "data": str(data),
        "videos": str(videos),
        "out": str(tmp_path / f"out_{split}"),
        "progress": False,
        "engine": {"frames": 2, "max_turns": 1},
        **over,
    }
    cfg = load_config(EvalConfig, None, [], base=base)
    backend = script if hasattr(script, "generate") else ScriptedBackend(script)
    summary = run_eval(cfg, backend=backend)
    results = {r.id: r.to_dict() for r in read_results(tmp_path / f"out_{split}" / "results.jsonl")}
    on_disk = json.loads((tmp_path / f"out_{split}" / "summary.json").read_text())
    assert on_disk["metrics"] == summary["metrics"]
    return summary, results, backend


def test_videomme(videomme, tmp_path):
    script = {"001-1": A("(C)"), "001-2": A("Coloured test bars"), "002-1": A("The answer is D.")}
    summary, res, _ = run("videomme", videomme, tmp_path, script)
    m = summary["metrics"]
    assert m["n"] == 4 and m["errors"] == 1 and m["error_kinds"] == {"video_missing": 1}
    assert m["variants"]["robust"]["accuracy"] == pytest.approx(2 / 4)
    # Video-MME's own rule: "(C)" is C, "Coloured test bars" is C (first capital A-D), "The answer
    # is D." is D; the reference: "(C)" is C, "Coloured test bars" falls through to its first
    # character "<", "The answer is D." is D
    assert m["variants"]["benchmark"]["accuracy"] == pytest.approx(1 / 4)
    assert m["variants"]["paper"]["accuracy"] == pytest.approx(1 / 4)
    assert res["001-2"]["scores"]["benchmark"] == {"extracted": "C", "correct": 0.0}
    assert res["001-2"]["scores"]["paper"] == {"extracted": "<", "correct": 0.0}
    assert summary["headline"] == m["variants"]["robust"]  # the default headline
    assert m["by_group"]["duration"] == {
        "long": {"n": 1, "correct": 0.0, "accuracy": 0.0},
        "medium": {"n": 1, "correct": 1.0, "accuracy": 1.0},
        "short": {"n": 2, "correct": 1.0, "accuracy": 0.5},
    }
    assert res["001-2"]["score"] == {"extracted": "B", "correct": 1.0}
    assert res["003-1"]["status"] == "error" and "vmMissing" in res["003-1"]["error"]["message"]
    assert len(res["002-1"]["overview_times"]) == 2
    assert summary["protocol"]["frames"] == 2 and summary["protocol"]["backend"] == "scripted"
    assert summary["protocol"]["prompts"]["files"]  # every packaged prompt file is hashed


def test_videomme_subtitles_follow_sampled_frames(videomme, tmp_path):
    from paravt.eval.subtitles import parse_srt, select_cues

    SRT = (videomme[0] / "subtitle" / "vmB.srt").read_text()
    script = {"001-1": A("B"), "001-2": A("B"), "002-1": A("D")}
    summary, res, backend = run("videomme_sub", videomme, tmp_path, script)
    sub = res["002-1"]["subtitles"]
    expected = select_cues(parse_srt(SRT), res["002-1"]["overview_times"])
    assert sub["frames_match"] is True and sub["lines"] == len(expected) >= 1
    asked = {r.episode_id: json.dumps(r.messages) for batch in backend.batches for r in batch}
    for cue in parse_srt(SRT):
        assert (cue.text in asked["002-1"]) == (cue in expected)
    assert "A blink-and-miss line." not in asked["002-1"]  # on screen between the two frames
    assert res["001-1"]["subtitles"]["lines"] == 0  # vmA has no .srt
    assert summary["metrics"]["variants"]["paper"]["accuracy"] == pytest.approx(3 / 4)


def test_longvideobench_five_options_backend_failure_and_missing_video(longvideobench, tmp_path):
    script = {
        "lvA_0": A("E"),
        "lvB_0": [Generation(error="HTTP 503 from server", finish_reason="error")],
    }
    summary, res, _ = run("longvideobench", longvideobench, tmp_path, script)
    m = summary["metrics"]
    assert res["lvA_0"]["score"]["correct"] == 1.0  # option E of five
    assert res["lvB_0"]["status"] == "error" and res["lvB_0"]["error"]["kind"] == "backend"
    assert res["lvB_0"]["answer_text"] is None  # a failed request is never scored as an answer
    assert m["errors"] == 2 and m["error_kinds"] == {"backend": 1, "video_missing": 1}
    assert m["variants"]["robust"]["accuracy"] == pytest.approx(1 / 3)  # errors in denominator
    assert m["variants"]["benchmark"]["accuracy"] == pytest.approx(1 / 3)  # first capital A-E

    # the server is back: a resumed run retries only the failed request
    healed = ScriptedBackend({"lvB_0": A("C")})
    summary, res, _ = run(
        "longvideobench", longvideobench, tmp_path, healed, resume=True, retry_errors=True
    )
    assert [b[0].episode_id for b in healed.batches] == ["lvB_0"]
    assert res["lvB_0"]["score"]["correct"] == 1.0
    assert summary["metrics"]["error_kinds"] == {"video_missing": 1}
    assert summary["metrics"]["variants"]["robust"]["accuracy"] == pytest.approx(2 / 3)
    lines = (tmp_path / "out_longvideobench" / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["id"] for x in lines) == ["lvA_0", "lvB_0", "lvGone_0"]


def call(start, end):
    args = {"video_path": "video.mp4", "start_time": start, "end_time": end}
    return "<tool_call>" + json.dumps({"name": "crop_video", "arguments": args}) + "</tool_call>"


def test_lvbench_first_letter_trap_multi_label_groups_and_tool_use(lvbench, tmp_path):
    parallel = "<think>Two windows at once.</think>" + call(0, 2) + call(2.5, 4.5)
    script = {
        "101": [parallel, "<answer>(B) a rabbit</answer>"],
        "102": A("A man walks in."),
        "201": A("B"),
    }
    summary, res, _ = run("lvbench", lvbench, tmp_path, script)
    assert res["102"]["score"] == {
        "extracted": None,
        "correct": 0.0,
    }  # gold is A: the trap must fail
    assert res["101"]["tools"]["executed"] == 2 and res["101"]["score"]["correct"] == 1.0
    m = summary["metrics"]
    assert m["tools"]["avg_calls"] == pytest.approx(2 / 3)
    assert m["tools"]["usage_rate"] == pytest.approx(1 / 3)
    assert m["variants"]["robust"]["accuracy"] == pytest.approx(2 / 3)
    # LVBench's rule and the reference both read "A man walks in." as option A (the trap)
    assert res["102"]["scores"]["benchmark"] == {"extracted": "A", "correct": 1.0}
    assert res["102"]["scores"]["paper"] == {"extracted": "A", "correct": 1.0}
    assert res["101"]["scores"]["benchmark"]["extracted"] == "B"  # "(B) a rabbit"
    assert m["variants"]["benchmark"]["accuracy"] == pytest.approx(3 / 3)
    assert m["variants"]["paper"]["accuracy"] == pytest.approx(3 / 3)
    assert m["by_group"]["task"]["temporal grounding"]["n"] == 1
    assert m["by_group"]["task"]["event understanding"]["accuracy"] == 0.0
    assert m["by_group"]["task"]["entity recognition"]["accuracy"] == 1.0


def test_mlvu_macro_vs_pooled_and_unmatched_answer_reported(mlvu, tmp_path):
    script = {"1_plotQA/0": A("B"), "1_plotQA/2": A("A"), "2_needle/0": A("A")}
    summary, res, backend = run("mlvu", mlvu, tmp_path, script)
    m = summary["metrics"]
    assert m["variants"]["robust"]["m_avg"] == pytest.approx((1 / 3 + 1.0) / 2)
    assert m["variants"]["benchmark"]["m_avg"] == pytest.approx((1 / 3 + 1.0) / 2)
    assert m["variants"]["paper"]["accuracy"] == pytest.approx(2 / 4)
    assert m["annotation_problems"] == [
        {"id": "1_plotQA/1", "problem": "answer 'Pancakes' matches no candidate"}
    ]
    assert "1_plotQA/1" not in {r.episode_id for b in backend.batches for r in b}  # not guessed
    assert summary["skipped_rows"][0]["row"] == "8_sub_scene.json[0]"


def test_mmvu_open_ended_rule_and_judge(mmvu, tmp_path, judge_server):
    script = {
        "mc-5": A("E"),
        "mc-text": A("C"),
        "oe-1": A("They flip a pancake."),
        "oe-2": A("rabbits"),
    }
    summary, res, _ = run("mmvu", mmvu, tmp_path, script)
    v = summary["metrics"]["variants"]
    assert summary["metrics"]["errors"] == 0  # open-ended rows with empty choices are not lost
    assert v["robust"]["accuracy"] == v["benchmark"]["accuracy"] == pytest.approx(2 / 4)
    assert v["robust"]["open_ended_accuracy"] == pytest.approx(1 / 2)
    # the reference reads open-ended answers as letters: "They flip a pancake." holds no
    # standalone capital A-J, so it reads as the first character "<" and scores 0
    assert res["oe-1"]["scores"]["paper"] == {"extracted": "<", "correct": 0.0}
    assert (
        v["paper"]["accuracy"] == pytest.approx(1 / 4) and v["paper"]["open_ended_accuracy"] == 0.0
    )
    assert res["oe-2"]["score"]["judged_by"] == "rule" and res["oe-2"]["score"]["correct"] == 0.0
    url = f"http://127.0.0.1:{judge_server.server_address[1]}/v1"
    judged, _, _ = run(
        "mmvu", mmvu, tmp_path / "judged", script, judge_base_url=url, judge_model="grader"
    )
    assert judged["metrics"]["variants"]["robust"]["accuracy"] == pytest.approx(3 / 4)
    assert judged["metrics"]["judged_by"] == {"http": 2}
    assert judged["protocol"]["scoring"]["open_ended_judge"]["base_url"] == url
    assert len(judge_server.requests) == 2  # only open-ended answers are judged


def test_charades_iou_metrics(charades, tmp_path):
    script = {
        "CHA1#1": A("0.5 - 1.5"),
        "CHA2#2": A("[9, 10.4]"),
        "CHA3#5": A("between 1.5 and 2.5 seconds"),
    }
    summary, res, _ = run("charades", charades, tmp_path, script)
    v = summary["metrics"]["variants"]["robust"]
    assert res["CHA2#2"]["score"]["iou"] == pytest.approx(0.35)  # gold 8-12 beyond the 10.4 s video
    assert v["miou"] == pytest.approx((1 + 0.35 + 0 + 1 / 3) / 4)
    assert (v["r@0.3"], v["r@0.5"], v["r@0.7"]) == (0.75, 0.25, 0.25)
    assert summary["metrics"]["variants"]["benchmark"] == v
    # the reference left the missing video out of the denominator
    paper = summary["metrics"]["variants"]["paper"]
    assert paper["miou"] == pytest.approx((1 + 0.35 + 1 / 3) / 3) and paper["n_counted"] == 3
    assert (paper["r@0.3"], paper["r@0.5"], paper["r@0.7"]) == (1.0, 1 / 3, 1 / 3)
    assert summary["metrics"]["error_kinds"] == {"video_missing": 1}
    assert summary["skipped_rows"] == [
        {"row": "charades_sta_test.txt:4", "reason": "no '##' between the span and the sentence"}
    ]


class _ExplodingBackend(BackendBase):
    """Raises (instead of returning an error Generation) whenever one episode is in the batch."""

    def __init__(self, inner, bad_id):
        self.inner, self.bad_id = inner, bad_id

    def generate(self, requests):
        if any(r.episode_id == self.bad_id for r in requests):
            raise RuntimeError("CUDA error: device-side assert")
        return self.inner.generate(requests)


def test_engine_crash_is_isolated_to_its_sample(charades, tmp_path, caplog):
    script = {"CHA1#1": A("0.5 - 1.5"), "CHA2#2": A("[9, 10.4]"), "CHA3#5": A("1.0 - 2.0")}
    backend = _ExplodingBackend(ScriptedBackend(script), "CHA2#2")
    with caplog.at_level(logging.WARNING, logger="paravt.eval.runner"):
        summary, res, _ = run("charades", charades, tmp_path, backend)
    # the batch's crash and the one episode behind it are logged, each with its traceback
    batch, episode = [r for r in caplog.records if r.name == "paravt.eval.runner"]
    assert batch.levelno == logging.WARNING and "batch of 3 episodes" in batch.getMessage()
    assert episode.levelno == logging.ERROR and "CHA2#2" in episode.getMessage()
    assert batch.exc_info[0] is episode.exc_info[0] is RuntimeError
    assert (
        res["CHA2#2"]["error"]["kind"] == "engine"
        and "device-side" in res["CHA2#2"]["error"]["message"]
    )
    assert res["CHA1#1"]["score"]["iou"] == 1.0 and res["CHA3#5"]["score"]["iou"] == 1.0
    assert summary["metrics"]["errors"] == 2 and summary["metrics"]["n"] == 4


def test_unreadable_video_is_an_error_in_the_denominator(charades, tmp_path):
    data, videos = charades
    (videos / "CHABAD.mp4").write_bytes(b"this is not a video file" * 100)
    ann = data / "charades_sta_test.txt"
    ann.write_text(ann.read_text() + "CHABAD 1.0 2.0##nothing decodes here.\n")
    script = {
        "CHA1#1": A("0.5 - 1.5"),
        "CHA2#2": A("[9, 10.4]"),
        "CHA3#5": A("1.0 - 2.0"),
        "CHABAD#6": A("1.0 - 2.0"),
    }
    summary, res, _ = run("charades", (data, videos), tmp_path, script)
    assert res["CHABAD#6"]["status"] == "error" and res["CHABAD#6"]["error"]["kind"] == "video"
    assert res["CHABAD#6"]["score"]["iou"] == 0.0
    assert summary["metrics"]["n"] == 5
    assert summary["metrics"]["error_kinds"] == {"video": 1, "video_missing": 1}


def test_real_hf_backend_on_a_tiny_model(lvbench, tmp_path, tiny_qwen3_dir, capsys):
    """The real local-model path (``--backend hf``): random weights, so only the pipeline is
    asserted — every sample answered or errored, tool rounds executed, the model recorded."""
    from paravt.cli.main import main

    data, videos = lvbench
    first = "<think>look</think>" + call(0, 2)
    argv = [
        "eval",
        "--benchmark",
        "lvbench",
        "--data",
        str(data),
        "--videos",
        str(videos),
        "--out",
        str(tmp_path / "hf"),
        "--backend",
        "hf",
        "--model",
        str(tiny_qwen3_dir),
        "--frames",
        "2",
        "--max-turns",
        "1",
        "--json",
        "--set",
        "backend.device=cpu",
        "--set",
        "engine.max_new_tokens=4",
        "--set",
        "engine.forced_tokens_mcq=3",
        "--set",
        "engine.min_pixels=784",
        "--set",
        "engine.max_pixels=2048",
        "--set",
        "engine.crop.max_pixels=2048",
        "--set",
        "engine.crop.max_frames=2",
        "--set",
        f"engine.think_prefix={first}",
    ]
    assert main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    m = summary["metrics"]
    assert m["n"] == 3 and m["errors"] == 0
    assert m["tools"]["usage_rate"] == 1.0  # the pre-filled call ran for every sample
    assert summary["protocol"]["model"] == str(tiny_qwen3_dir)
    assert summary["protocol"]["backend"] == "hf"
    assert 0.0 <= m["variants"]["robust"]["accuracy"] <= 1.0


def test_tool_usage_reports_attempted_calls_next_to_executed(lvbench, tmp_path):
    """Attempted = every parsed call (over the cap, failed, ignored in the forced turn included)."""
    first = (
        "<think>Three windows.</think>"
        + call(0, 2)
        + call(9, 3)
        + call(1, 2)
        + "<tool_call>{not json</tool_call>"
    )
    forced = "<think>Enough.</think>" + call(0, 1) + "<answer>B</answer>"
    script = {"101": [first, forced], "102": A("A"), "201": A("B")}
    summary, res, _ = run(
        "lvbench",
        lvbench,
        tmp_path,
        script,
        engine={"frames": 2, "max_turns": 1, "max_parallel": 2},
    )
    tools = res["101"]["tools"]
    # call(0, 2) ran; call(9, 3) ran into a tool error (5 s video); call(1, 2) was over the cap of
    # 2; the forced turn's call was ignored; the malformed block is not a parsed call
    assert tools["executed"] == 1 and tools["attempted"] == 4 and tools["malformed"] == 1
    t = summary["metrics"]["tools"]
    assert t["avg_calls"] == pytest.approx(1 / 3) and t["usage_rate"] == pytest.approx(1 / 3)
    assert t["avg_attempted"] == pytest.approx(4 / 3) and t["attempt_rate"] == pytest.approx(1 / 3)


ENGINE = {"frames": 2, "max_turns": 1}


def test_a_user_template_is_used_recorded_and_checked_at_start(videomme, tmp_path):
    """``engine.user_template``: every episode's user text is rendered from it, the protocol
    records its hash, and a template that cannot show the split's options stops the run before
    the first episode, naming the missing field."""
    from paravt.agent.prompts import UserTemplateError

    good = tmp_path / "user.txt"
    good.write_text("Q: ${question}\n${options}Letter only. File: ${video_name}")
    script = {"001-1": A("C"), "001-2": A("B"), "002-1": A("D")}
    summary, _, backend = run(
        "videomme", videomme, tmp_path, script, engine={**ENGINE, "user_template": str(good)}
    )
    prompts = summary["protocol"]["prompts"]
    assert prompts["user_template_file"] == str(good) and prompts["user_template_sha256"]
    texts = [r.messages[1]["content"][-1]["text"] for batch in backend.batches for r in batch]
    assert sorted(t.rsplit("File: ", 1)[1] for t in texts) == ["vmA.mp4", "vmA.mp4", "vmB.mkv"]
    assert texts[0].startswith("\nQ: ") and "\nA. " in texts[0]

    bad = tmp_path / "no_options.txt"
    bad.write_text("Q: ${question}")
    calls = []
    with pytest.raises(UserTemplateError, match=r"no \$\{options\} field"):
        run(
            "videomme",
            videomme,
            tmp_path / "bad",
            lambda req: calls.append(req) or "<answer>A</answer>",
            engine={**ENGINE, "user_template": str(bad)},
        )
    assert calls == [] and not (tmp_path / "bad" / "out_videomme" / "results.jsonl").exists()
