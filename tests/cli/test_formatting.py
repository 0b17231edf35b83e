"""What people read: no ``Final answer: None``, rounded metadata, tables whole off a terminal,
progress lines on stderr, training episodes told apart in the viewer's index."""

from __future__ import annotations

import json
import re
import subprocess

import media
import pytest

from paravt.agent.view import episode_view
from paravt.cli.cmd_bench_kernels import _table
from paravt.cli.common import print_table
from paravt.schema.episodes import EpisodeRecord, TurnRecord


def _text(renderable) -> str:
    from rich.console import Console

    console = Console(width=100, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(renderable)
    return console.export_text()


def test_an_episode_without_an_answer_says_so():
    rec = EpisodeRecord(
        id="q", video="v.mp4", question="Which?", question_type="mcq", options=["a", "b"],
        gold="A", mode="parallel", evidence="frames", prediction=None, answer_source=None,
        turns=[TurnRecord(0, "<think>still thinking", finish_reason="length", generated_tokens=96)],
    )  # fmt: skip
    text = _text(episode_view(rec))
    assert "Final answer: none" in text and "None" not in text
    assert "token limit (96 tokens)" in text


def test_probe_rounds_what_a_person_reads(tmp_path, paravt_cli):
    video = tmp_path / "ntsc.mp4"
    subprocess.run(
        [media.ffmpeg_exe(), "-y", "-loglevel", "error", "-f", "lavfi", "-i",
         "testsrc2=size=160x90:rate=30000/1001:duration=2", "-c:v", "libx264", "-preset",
         "ultrafast", str(video)],
        check=True,
    )  # fmt: skip
    r = paravt_cli("probe", video)
    assert r.returncode == 0, r.stderr
    assert "average_fps: 29.97\n" in r.stdout and "duration: 2.002\n" in r.stdout
    r = paravt_cli("probe", video, "--json")
    assert json.loads(r.stdout)["meta"]["average_fps"] == pytest.approx(30000 / 1001)


def test_the_bench_table_is_printed_whole_off_a_terminal(capsys):
    row = {"name": "tool_batch", "layout": "image", "frames": 80, "paravt_resize": "uint8",
           "ms": {"paravt": 12.3, "reference_float": 40.1, "hf_torchvision": 30.2, "hf_pil": 90.5},
           "speedup": {"hf_torchvision_over_paravt": 2.46, "hf_pil_over_paravt": 7.36}}  # fmt: skip
    print_table(_table({"device_name": "cpu", "frames_source": "generated", "workloads": [row]}))
    out = capsys.readouterr().out
    assert "…" not in out
    for word in ("workload", "tool_batch", "HF torchvision ms", "x HF PIL", "7.36x"):
        assert word in out, out


def test_make_toy_task_reports_progress_on_stderr(tmp_path, paravt_cli):
    r = paravt_cli("make-toy-task", tmp_path / "toy", "--n", "3", "--set", "visibility_videos=0")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines and lines[-1] == "make-toy-task: 3 of 3 videos [3/3]"


def test_the_engine_reports_its_rounds(tiny_qwen3_dir, gop_video):
    from transformers import AutoProcessor

    from paravt.agent.config import EngineConfig
    from paravt.agent.engine import EpisodeEngine
    from paravt.backends.scripted import ScriptedBackend
    from paravt.schema.episodes import EpisodeInput

    call = ('<tool_call>{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 3}}'
            "</tool_call>")  # fmt: skip
    backend = ScriptedBackend(
        [call, "<answer>A</answer>"], processor=AutoProcessor.from_pretrained(tiny_qwen3_dir)
    )
    engine = EpisodeEngine(backend, EngineConfig(frames=2, min_pixels=784, max_pixels=4096))
    lines: list[str] = []
    engine.progress = lines.append
    [rec] = engine.run([EpisodeInput("e", str(gop_video), "Which?", ["a", "b"])])
    assert rec.status == "ok"
    assert lines == [
        "decoding the overviews of 1 episode(s)",
        "turn 1 of at most 4: generating (1 active)",
        "turn 1: running 1 tool call(s)",
        "turn 2 of at most 4: generating (1 active)",
    ]


def test_the_viewer_index_tells_a_prompts_generations_apart(tmp_path, paravt_cli):
    """A GRPO step dumps every generation of a prompt under the prompt's id: the index listed
    them as identical rows. It now shows each one's step, generation and advantage."""
    (tmp_path / "run" / "episodes").mkdir(parents=True)
    rows = []
    for step in (1, 2):
        for g, adv in enumerate((0.7, -0.7)):
            record = {"id": "row-3", "video": "v.mp4", "question": "Which?",
                      "question_type": "mcq", "options": ["a", "b"], "gold": "A",
                      "prediction": "A", "turns": [], "calls": [], "overview_times": [],
                      "video_meta": {"duration": 4.0}}  # fmt: skip
            rows.append({"step": step, "rank": 0, "k": 2, "advantage": adv, "record": record,
                         "frames": [], "reward": {"acc": 1.0 - g, "total": 1.0 - g}})  # fmt: skip
    (tmp_path / "run" / "episodes" / "dump-rank0.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    r = paravt_cli("view", tmp_path / "run", "-o", tmp_path / "site")
    assert r.returncode == 0, r.stderr
    html = (tmp_path / "site" / "index.html").read_text()
    heads = re.findall(r"<th data-col=\"\d+\">([^<]*)</th>", html)
    assert heads[:5] == ["run", "id", "step", "gen", "adv"]
    body = html.split("<tbody>", 1)[1]
    cells = [
        tuple(re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td>(.*?)</td>", tr)[1:5])
        for tr in re.findall(r"<tr [^>]*>(.*?)</tr>", body)
    ]
    assert cells == [("row-3", "1", "0", "0.70"), ("row-3", "1", "1", "-0.70"),
                     ("row-3", "2", "0", "0.70"), ("row-3", "2", "1", "-0.70")]  # fmt: skip


def test_the_viewer_shows_non_square_pixels_at_their_display_shape(tmp_path, paravt_cli):
    """A dumped 32x32 frame of a video whose pixels are twice as wide as high is a 64x32
    picture on the episode's page."""
    from PIL import Image

    frames = tmp_path / "run" / "episodes" / "frames"
    frames.mkdir(parents=True)
    Image.new("RGB", (32, 32), (200, 40, 40)).save(frames / "f0.jpg")
    record = {"id": "e", "video": "v.mp4", "question": "Which?", "question_type": "mcq",
              "options": ["a", "b"], "gold": "A", "prediction": "A", "turns": [], "calls": [],
              "overview_times": [1.0],
              "video_meta": {"duration": 4.0, "pixel_aspect_ratio": 2.0}}  # fmt: skip
    row = {"step": 1, "rank": 0, "k": 1, "record": record, "reward": None,
           "frames": [{"source": "overview", "time": 1.0, "file": "f0.jpg"}]}  # fmt: skip
    (tmp_path / "run" / "episodes" / "dump-rank0.jsonl").write_text(json.dumps(row) + "\n")
    assert paravt_cli("view", tmp_path / "run", "-o", tmp_path / "site").returncode == 0
    [shown] = sorted((tmp_path / "site" / "frames").glob("*.jpg"))
    assert Image.open(shown).size == (64, 32)
