"""``paravt sft``: engine-played scripted trajectories over generated videos, a few real TRL
SFTTrainer steps on a tiny Qwen3-VL, the loss mask, resume, refusal and skipped input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from paravt.errors import ConfigError

CALLS = (
    "Two windows at once.</think>\n"
    '<tool_call>\n{"name": "crop_video", "arguments": {"video_path": "v", "start_time": 0, '
    '"end_time": 4}}\n</tool_call>\n'
    '<tool_call>\n{"name": "crop_video", "arguments": {"video_path": "v", "start_time": 6, '
    '"end_time": 10}}\n</tool_call>'
)
ANSWER = "<think>The second window shows it.</think>\n<answer>B</answer>"
GOOD = ["r0", "r1", "r2", "r3"]


def _rows(path: Path, video: Path) -> Path:
    rows = [
        {"id": i, "video": str(video), "question": f"Which option? ({i})",
         "options": ["red", "blue", "green", "grey"], "answer": "B", "question_type": "mcq"}
        for i in GOOD + ["no-script"]
    ]  # fmt: skip
    rows.insert(2, dict(rows[0], id="gone", video=str(video.parent / "gone.mp4")))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _overrides(run_dir: Path, data: Path, *extra: str) -> tuple[str, ...]:
    script = json.dumps({i: [CALLS, ANSWER] for i in GOOD})  # "no-script" errors in the backend
    return (
        f"output_dir={run_dir}",
        f"data.path={data}",
        f"trajectories.options.script={script}",
        "trainer.max_steps=6",
        "trainer.save_steps=3",
        "trainer.learning_rate=3e-3",
        *extra,
    )


class _Probe:
    def __init__(self):
        self.trainer = None

    def attach(self, trainer):
        self.trainer = trainer


@pytest.fixture(scope="module")
def sft_run(tmp_path_factory, gop_video):
    from paravt.train.sft.run import load_sft_config, run_sft

    base = tmp_path_factory.mktemp("sft")
    data = _rows(base / "rows.jsonl", gop_video)
    run_dir = base / "run"
    cfg = load_sft_config("sft-smoke", _overrides(run_dir, data))
    probe = _Probe()
    summary = run_sft(cfg, on_trainer=probe.attach)
    return run_dir, data, summary, probe


def _loss(model_dir: Path, run_dir: Path) -> float:
    """Mean loss of a model over every cached trajectory (generated tokens only)."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from paravt.train.sft.dataset import StreamCollator, trajectory_dataset

    model = AutoModelForImageTextToText.from_pretrained(model_dir).eval()
    collate = StreamCollator(AutoProcessor.from_pretrained(model_dir))
    batch = collate(list(trajectory_dataset(run_dir / "trajectories")))
    with torch.no_grad():
        return float(model(**batch).loss)


def test_few_sft_steps_lower_the_loss_on_the_trajectories(sft_run):
    run_dir, _, summary, _ = sft_run
    assert summary["global_step"] == 6
    before = _loss(run_dir / "tiny-qwen3-vl", run_dir)
    after = _loss(Path(summary["final_model"]), run_dir)
    assert after < 0.8 * before, (before, after)
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert all(r["episodes"] == 4 and r["num_tokens"] > 0 for r in rows)
    assert rows[-1]["loss"] < rows[0]["loss"]
    recorded = json.loads((run_dir / "config.json").read_text())
    assert recorded["command"]["trajectories"]["backend"] == "scripted"
    assert recorded["trainer_resolved"]["dataset_kwargs"] == {"skip_prepare_dataset": True}


def test_loss_mask_is_exactly_the_generated_tokens(sft_run):
    from transformers import AutoProcessor

    from paravt.agent.chat import ChatCodec
    from paravt.train.sft.dataset import read_example, trajectory_dataset
    from paravt.train.sft.trajectories import IGNORE_INDEX

    run_dir, _, _, probe = sft_run
    codec = ChatCodec(AutoProcessor.from_pretrained(run_dir / "final"))
    turns = [codec.encode_text(t) + [codec.end_of_turn_id] for t in (CALLS, ANSWER)]
    files = list(trajectory_dataset(run_dir / "trajectories"))
    assert len(files) == 4
    for row in files:
        ex = read_example(row["file"])
        ids, labels = ex["input_ids"], ex["labels"]
        on = [i for i, x in enumerate(labels) if x != IGNORE_INDEX]
        assert all(labels[i] == ids[i] for i in on)
        # two contiguous runs, each exactly one scripted turn with its stop token
        runs, start = [], on[0]
        for a, b in zip(on, on[1:] + [None], strict=True):
            if b != a + 1:
                runs.append(ids[start : a + 1])
                start = b
        assert runs == turns
        # not the prompt (its think prefix included), not the tool turn between the runs
        assert on[0] == ex["prompt_len"]
        assert codec.decode(ids[: ex["prompt_len"]]).endswith("<|im_start|>assistant\n<think>\n")
        between = codec.decode(ids[on[0] + len(turns[0]) : on[-1] - len(turns[1]) + 1])
        assert "<tool_response>" in between and "<|image_pad|>" in between
        assert len(ex["frames"]) == 4 + 2 * 2  # K overview frames + two windows of 2
    # the collator hands the trainer every frame of the batch, in row order
    batch = probe.trainer.data_collator(files[:2])
    assert batch["pixel_values"].shape[0] == int(batch["image_grid_thw"].prod(-1).sum())
    pads = int((batch["input_ids"] == codec.image_token_id).sum())
    assert pads * 4 == batch["pixel_values"].shape[0]


def test_missing_videos_and_errored_trajectories_are_skipped_and_counted(sft_run):
    run_dir, _, summary, _ = sft_run
    assert summary["data"]["skipped"] == 1 and summary["data"]["reasons"] == {"missing": 1}
    skipped = [json.loads(x) for x in (run_dir / "skipped_rows.jsonl").read_text().splitlines()]
    assert [s["id"] for s in skipped] == ["gone"]
    t = summary["trajectories"]
    assert (t["episodes"], t["kept"], t["skipped"]) == (5, 4, 1)
    assert t["skip_reasons"] == {"episode_error": 1}
    played = [
        json.loads(x) for x in (run_dir / "trajectories/episodes.jsonl").read_text().splitlines()
    ]
    errored = [p for p in played if not p["sft"]["kept"]]
    assert [p["id"] for p in errored] == ["no-script"]
    assert errored[0]["sft"]["skip_reason"] == "episode_error:backend"
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["skipped_rows"] == 1 and rows[0]["skipped_episodes"] == 1


def test_resume_continues_from_the_checkpoint_with_the_cached_trajectories(sft_run, tmp_path):
    from paravt.train.sft.run import load_sft_config, run_sft

    run_dir, data, _, _ = sft_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    shutil.rmtree(copy / "checkpoint-6")  # as if killed after checkpoint 3
    cached = {p.name: p.stat().st_mtime_ns for p in (copy / "trajectories").iterdir()}
    cfg = load_sft_config("sft-smoke", _overrides(copy, data, "trainer.max_steps=6"))
    summary = run_sft(cfg, resume=True)
    assert summary["resumed_from"].endswith("checkpoint-3") and summary["global_step"] == 6
    rows = [json.loads(line) for line in (copy / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]
    assert {p.name: p.stat().st_mtime_ns for p in (copy / "trajectories").iterdir()} == cached
    # resuming replays the original run's steps 4-6 exactly (same data, same order)
    original = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert rows[3]["loss"] == pytest.approx(original[3]["loss"], rel=1e-4)


def test_a_resumed_run_saves_and_logs_at_its_own_intervals_not_the_checkpoints(sft_run, tmp_path):
    """transformers restores the checkpoint's save and logging intervals on resume (one warning
    line): resumed at step 3 with ``save_steps=2`` it would save at 6 and 8 only. The run's own
    config wins: checkpoints 4, 6 and 8, a metrics row every 2 steps after the checkpoint."""
    from paravt.train.sft.run import load_sft_config, run_sft

    run_dir, data, _, _ = sft_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    shutil.rmtree(copy / "checkpoint-6")
    more = ("trainer.max_steps=8", "trainer.save_steps=2", "trainer.logging_steps=2")
    cfg = load_sft_config(
        "sft-smoke", _overrides(copy, data, *more, "trainer.save_total_limit=null")
    )
    assert run_sft(cfg, resume=True)["global_step"] == 8
    assert sorted(p.name for p in copy.glob("checkpoint-*")) == [
        f"checkpoint-{n}" for n in (3, 4, 6, 8)
    ]
    rows = [json.loads(line) for line in (copy / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 6, 8]


def test_fresh_run_over_checkpoints_exits_2(sft_run, capsys):
    from paravt.cli.main import main

    run_dir, data, _, _ = sft_run
    code = main(
        [
            "sft",
            "--config",
            "sft-smoke",
            *[x for o in _overrides(run_dir, data) for x in ("--set", o)],
        ]
    )
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        err[-1].startswith("paravt: error:") and "checkpoint-6" in err[-1] and "--resume" in err[-1]
    )


def test_trajectory_backend_by_import_path_and_bad_backends(tiny_qwen3_dir):
    from transformers import AutoProcessor

    from paravt.train.sft.run import load_sft_config
    from paravt.train.sft.trajectories import make_trajectory_backend

    processor = AutoProcessor.from_pretrained(tiny_qwen3_dir)
    backend = make_trajectory_backend(
        "paravt.backends.scripted:ScriptedBackend", {"script": [ANSWER]}, processor
    )
    assert backend.codec is not None and backend.script == [ANSWER]
    with pytest.raises(ConfigError, match="no codec"):
        make_trajectory_backend(
            "paravt.backends.scripted:ScriptedBackend",
            {"script": [], "processor": None},
            processor,
        )
    with pytest.raises(ConfigError, match="cannot import"):
        make_trajectory_backend("paravt.toy.nowhere:Oracle", {}, processor)
    with pytest.raises(ConfigError, match="no codec"):
        make_trajectory_backend("openai", {}, processor)
    with pytest.raises(ConfigError, match="module:Attr"):
        make_trajectory_backend("oracle", {}, processor)
    with pytest.raises(ConfigError, match="options.script"):
        make_trajectory_backend("scripted", {}, processor)
    cfg = load_sft_config(
        "sft-smoke",
        ("trajectories.backend=pkg.mod:Oracle", "trajectories.options.tool_prior=0.9",
         "trajectories.options.format_noise=0"),
    )  # fmt: skip
    opts = cfg.trajectories.options
    assert (opts["tool_prior"], opts["format_noise"]) == (0.9, 0)
    toy = load_sft_config("sft-toy", ())  # the packaged toy recipe is a valid config
    assert toy.model == "tiny:qwen3-vl:toy" and toy.trajectories.options["tool_prior"] == 0.9
    with pytest.raises(ConfigError, match="packing"):
        load_sft_config("sft-smoke", ("trainer.packing=true",))
    with pytest.raises(ConfigError, match="unknown config key 'trainer.not_a_key'"):
        load_sft_config("sft-smoke", ("trainer.not_a_key=1",))
