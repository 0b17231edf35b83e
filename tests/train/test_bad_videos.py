"""A training set with 20% missing/corrupt videos trains to the end; skips are reported."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from gloo_ranks import run_two_ranks


def test_missing_and_corrupt_videos_train_to_the_end(tmp_path, shared_videos):
    """Also the Qwen2.5-VL path of the trainer (factor 28, its own rope): the smoke test covers Qwen3-VL."""
    from paravt.train.run import load_command_config, run_training

    good = [
        "decord__flipping_a_pancake.mkv",
        "mediabunny__trim-buck-bunny.webm",
        "torchcodec__testsrc2.mp4",
        "torchcodec__var_fps_video.mp4",
        "torchcodec__bt709_full_range.mp4",
        "decord__flipping_a_pancake.mkv",
        "torchcodec__testsrc2.mp4",
    ]
    vanishing = (
        tmp_path / "vanishing.mp4"
    )  # readable when checked, deleted before training: a mid-run failure
    shutil.copy(shared_videos / "torchcodec__testsrc2.mp4", vanishing)
    videos = good + [str(vanishing), "no/such/video.mp4", "decord__corrupted.mp4"]
    rows = [
        {
            "id": f"q{i}",
            "video": v,
            "question": "What is shown?",
            "options": ["A thing", "Another"],
            "answer": "A",
            "question_type": "mcq",
        }
        for i, v in enumerate(videos)
    ]
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_dir = tmp_path / "run"
    cfg = load_command_config(
        "cpu-smoke",
        (
            f"output_dir={run_dir}",
            "model=tiny:qwen2.5-vl",
            f"data.path={data}",
            f"data.video_root={shared_videos}",
            "trainer.per_device_train_batch_size=2",
            "trainer.max_steps=-1",
            "trainer.num_train_epochs=1",
            "engine.max_turns=1",
            "trainer.save_steps=100",
            "trainer.gating_choices=[2]",
        ),
    )
    summary = run_training(cfg, on_trainer=lambda trainer: vanishing.unlink())
    assert summary["global_step"] == 9  # every kept row, one prompt (two generations) per step
    report = json.loads((run_dir / "data_report.json").read_text())
    assert report["rows"] == 10 and report["kept"] == 9 and report["skipped"] == 1
    skipped = [json.loads(x) for x in (run_dir / "skipped_rows.jsonl").read_text().splitlines()]
    assert [s["id"] for s in skipped] == ["q8"] and skipped[0]["reason"].startswith("missing")
    episodes = [
        json.loads(x) for x in (run_dir / "episodes" / "rank0.jsonl").read_text().splitlines()
    ]
    by_id = {e["prompt_id"]: e for e in episodes}
    assert by_id["q7"]["status"] == "error" and by_id["q7"]["reward"] is None  # vanished mid-run
    assert by_id["q9"]["status"] in ("ok", "error")  # the damaged file trained or failed cleanly
    steps = [json.loads(x)["step"] for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, 10))
    ok = [e for e in episodes if e["status"] == "ok"]
    assert ok and all(e["images"] > 2 for e in ok)  # K=2 overview frames + the tool windows' frames
    assert all(e["reward"] is not None for e in ok)


@pytest.mark.ranks
def test_start_up_probes_once_and_every_rank_keeps_the_same_rows(tmp_path, shared_videos):
    """2 gloo ranks; rank 1 gets a read error on one video. Each video is probed on one rank, and
    both ranks keep the same rows (before: every rank probed every video, and rank 1 kept 4 rows
    where rank 0 kept 6)."""
    worker = Path(__file__).with_name("data_split_worker.py")
    done = run_two_ranks(
        worker, str(shared_videos), str(tmp_path / "run"), str(tmp_path), timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["rows"] == ranks[1]["rows"]
    assert ranks[0]["skipped"] == ranks[1]["skipped"]
    probed = ranks[0]["probed"] + ranks[1]["probed"]
    assert sorted(probed) == sorted(set(probed)) and len(probed) == 4  # each video once, in all
    # the videos are dealt out in order of first use: the flaky one is rank 1's, and its read
    # error is that video's verdict on rank 0 too
    assert "mediabunny__trim-buck-bunny.webm" in ranks[1]["probed"]
    assert ranks[0]["skipped"] == ["mediabunny__trim-buck-bunny.webm"] * 2
