"""The toy task: deterministic, readable as written, and the two properties that make it a task
about tools — a parallel sweep always returns a needle frame, a sparse overview rarely does.

Real parts only: videos from the real generator, the real ``crop_video`` executor, the real
overview sampler and decoder."""

from __future__ import annotations

import dataclasses
import json

import pytest

from paravt.cli.main import main
from paravt.data.rows import read_rows
from paravt.errors import ConfigError
from paravt.eval.adapters import load_split
from paravt.tools.batch import execute_windows
from paravt.tools.results import CropConfig, WindowRequest
from paravt.toy.detect import needle_colour
from paravt.toy.generate import make_toy_task
from paravt.toy.render import encode_mp4, render_frames
from paravt.toy.task import (
    GENERATOR_VERSION,
    PALETTE,
    ToyTaskConfig,
    expected_visibility,
    infer_duration,
    tiling_windows,
    video_spec,
)


def test_config_checks_counts_and_the_sweep_property():
    with pytest.raises(ConfigError, match="at least 1"):
        ToyTaskConfig(n=0)
    with pytest.raises(ConfigError, match="frame spacing"):
        ToyTaskConfig(needle_seconds=2.0)  # 2.25 s between frames of a 36 s window: can miss
    with pytest.raises(ConfigError, match="frame spacing"):
        ToyTaskConfig(sweep_windows=3)
    assert ToyTaskConfig(sweep_windows=4).needle_frames == 6


def test_rows_are_deterministic_and_read_as_written(toy_eval, tmp_path):
    out, cfg, manifest = toy_eval
    again = make_toy_task(dataclasses.replace(cfg, out=str(tmp_path)))
    rows = (out / "eval.jsonl").read_text()
    assert rows == (tmp_path / "eval.jsonl").read_text()
    first = json.loads(rows.splitlines()[0])["video"]
    assert (out / first).read_bytes() == (tmp_path / first).read_bytes()
    assert again["rows"] == manifest["rows"] == 12 and manifest["durations"] == {
        "120": 2,
        "150": 3,
        "180": 1,
    }
    other = video_spec(dataclasses.replace(cfg, split="train"), 0)
    assert (other.start_frame, other.colour) != (
        video_spec(cfg, 0).start_frame,
        video_spec(cfg, 0).colour,
    )

    train_rows = read_rows(out / "eval.jsonl", out)  # what `paravt train` reads
    assert not train_rows.skipped and len(train_rows.rows) == 12
    split = load_split("jsonl", out, out)  # what `paravt eval --benchmark jsonl` reads
    assert not split.skipped and all(s.problem is None for s in split.samples)
    for row, sample in zip(train_rows.rows, split.samples, strict=True):
        spec = video_spec(cfg, int(row.id.split("-")[1]))
        if row.question_type == "mcq":
            assert (
                row.options[ord(row.answer) - 65]
                == spec.colour
                == sample.options[ord(sample.answer) - 65]
            )
            assert len(set(row.options)) == 4 and set(row.options) <= set(PALETTE)
        else:
            assert row.answer == spec.span == sample.answer and spec.span[1] - spec.span[0] == 3.0
        assert 0 <= spec.span[0] and spec.span[1] <= spec.duration
    task = json.loads((out / "task.json").read_text())
    assert task["generator"] == GENERATOR_VERSION
    assert task["splits"]["eval"]["config"]["seed"] == 7


@pytest.mark.parametrize("n_windows", [4, 5])
@pytest.mark.parametrize("duration", [120, 150, 180])
def test_a_tiling_sweep_always_returns_a_needle_frame(tmp_path, duration, n_windows):
    """Run the real tool on a generated video: the needle is on a returned frame, and — over the
    frame times the tool really returned — every possible needle start would have been hit."""
    cfg = ToyTaskConfig(out=str(tmp_path), n=1, durations=[duration], sweep_windows=n_windows)
    spec = video_spec(cfg, 0)
    path = tmp_path / "v.mp4"
    encode_mp4(render_frames(spec), path, cfg.fps, cfg.keyframe_seconds, cfg.crf)
    windows = tiling_windows(duration, n_windows)
    batch = execute_windows(
        [WindowRequest(str(path), {"start_time": s, "end_time": e}) for s, e in windows],
        CropConfig(),
    )
    assert all(r.ok for r in batch.results)
    seen = [
        (t, needle_colour(f)) for r in batch.results for t, f in zip(r.times, r.frames, strict=True)
    ]
    assert {c for _, c in seen if c is not None} == {spec.colour}
    shown = {round(t * cfg.fps) for t, c in seen if c is not None}
    assert shown and shown <= set(range(spec.start_frame, spec.start_frame + spec.needle_frames))
    sampled = sorted({round(t * cfg.fps) for t, _ in seen})
    for start in range(spec.num_frames - spec.needle_frames + 1):
        assert any(start <= i < start + spec.needle_frames for i in sampled), start


def test_overview_visibility_is_about_k_len_over_duration(tmp_path):
    cfg = ToyTaskConfig(
        out=str(tmp_path), n=16, seed=3, visibility_ks=[4, 64], visibility_videos=16
    )
    vis = make_toy_task(cfg)["visibility"]
    assert vis["4"]["videos"] == 16
    assert vis["4"]["expected"] == pytest.approx(
        sum(expected_visibility(4, 3.0, video_spec(cfg, i).duration) for i in range(16)) / 16,
        abs=1e-4,
    )
    assert vis["4"]["expected"] < 0.1 and vis["4"]["measured"] <= 0.3  # loose: 16 videos
    assert vis["64"]["expected"] == 1.0 and vis["64"]["measured"] >= 0.9


def test_duration_is_read_back_from_overview_times():
    for d in (120, 150, 180):
        for k in (1, 4, 64):
            centres = [(i + 0.5) * d / k for i in range(k)]
            frames = [int(t * 2) / 2 for t in centres]  # pts of the 2 fps frames shown then
            assert infer_duration(frames, (120, 150, 180)) == d


def _cli(capsys, *args):
    """Run ``paravt make-toy-task`` in-process: (exit code, stdout, non-empty stderr lines)."""
    code = main(["make-toy-task", *args])
    captured = capsys.readouterr()
    return code, captured.out, [ln for ln in captured.err.splitlines() if ln.strip()]


def test_cli_writes_the_split_and_refuses_bad_input_in_one_line(tmp_path, capsys):
    code, out, _ = _cli(
        capsys,
        str(tmp_path / "t"),
        "--n",
        "2",
        "--seed",
        "1",
        "--split",
        "eval",
        "--set",
        "visibility_videos=0",
        "--json",
    )
    assert code == 0
    assert json.loads(out)["videos"] == 2
    assert (tmp_path / "t" / "eval.jsonl").is_file() and (tmp_path / "t" / "task.json").is_file()
    blocker = tmp_path / "file"
    blocker.write_text("")
    for args, word in (
        ([str(tmp_path / "u"), "--n", "0"], "n=0"),
        ([str(tmp_path / "u"), "--n", "-3"], "n=-3"),
        ([str(tmp_path / "u"), "--split", "dev"], "dev"),
        ([str(blocker / "sub"), "--n", "1"], "writable"),
    ):
        code, _, lines = _cli(capsys, *args)
        assert code == 2 and len(lines) == 1 and word in lines[0], lines


def test_the_toy_tokenizer_has_each_colour_and_the_answer_words_as_one_token():
    """The toy preset's tokenizer (paravt.models.tiny._TOY_CORPUS) must keep up with PALETTE:
    a colour split into pieces made the colour-to-letter lookup unlearnable at 5 M parameters."""
    from paravt.models.tiny import _TOY_CORPUS, _train_tokenizer

    tok = _train_tokenizer(extra=_TOY_CORPUS)
    for word in [*PALETTE, "square", "option"]:
        assert len(tok(f" {word}")["input_ids"]) == 1, word
