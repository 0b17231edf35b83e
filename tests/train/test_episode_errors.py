"""A training step whose every episode failed says so in the log, once, with the first error."""

from __future__ import annotations

import json
import logging
import shutil

from paravt.schema.episodes import EpisodeRecord
from paravt.train.episode_errors import warn_if_every_episode_failed

LOGGER = "paravt.train.episode_errors"


def _record(i: int, error: str | None = None, kind: str | None = None) -> EpisodeRecord:
    rec = EpisodeRecord(
        id=f"q{i}", video="v.mp4", question="Q?", question_type="mcq", options=["a", "b"],
        gold="A", mode="parallel", evidence="frames",
    )  # fmt: skip
    if error is not None:
        rec.status, rec.error, rec.error_kind = "error", error, kind
    return rec


def test_one_warning_per_step_only_when_no_episode_succeeded(caplog):
    failed = [_record(0, "internal error while opening video v.mp4: TypeError: x", "engine"),
              _record(1, "cannot read video v.mp4: VideoOpenError: y", "video"),
              _record(2, "internal error while opening video v.mp4: TypeError: x", "engine")]  # fmt: skip
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert warn_if_every_episode_failed(failed[:2] + [_record(3)], step=4) is None
        assert warn_if_every_episode_failed([], step=4) is None
        text = warn_if_every_episode_failed(failed, step=5)
    [logged] = [r for r in caplog.records if r.name == LOGGER]
    assert logged.levelno == logging.WARNING and logged.getMessage() == text
    assert text.startswith("step 5: every one of the 3 episodes failed (engine: 2, video: 1)")
    assert "first error (episode q0, kind engine): internal error while opening video" in text


def test_a_real_step_whose_videos_all_turned_corrupt_warns_once(
    tmp_path, shared_videos, smoke_args, caplog
):
    """The tiny-model trainer: the row's video passes the data check, then is overwritten with
    garbage before training; both generations of the step fail and the log says why."""
    from paravt.train.run import load_command_config, run_training

    video = tmp_path / "clip.mp4"
    shutil.copy(shared_videos / "torchcodec__testsrc2.mp4", video)
    row = {"id": "q0", "video": str(video), "question": "What is shown?",
           "options": ["A thing", "Another"], "answer": "A", "question_type": "mcq"}  # fmt: skip
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps(row) + "\n")
    cfg = load_command_config(
        "cpu-smoke",
        smoke_args(
            tmp_path / "run", shared_videos, f"data.path={data}", "model=tiny:qwen3-vl",
            "trainer.per_device_train_batch_size=2", "trainer.max_steps=1",
            "trainer.save_steps=100", "trainer.gating_choices=[2]",
        ),
    )  # fmt: skip

    def corrupt(trainer):
        video.write_bytes(b"\x00this is no longer a video" * 64)

    with caplog.at_level(logging.WARNING, logger=LOGGER):
        summary = run_training(cfg, on_trainer=corrupt)
    assert summary["global_step"] == 1
    [logged] = [r for r in caplog.records if r.name == LOGGER]
    text = logged.getMessage()
    assert text.startswith("step 1: every one of the 2 episodes failed (video: 2)")
    assert f"kind video): cannot read video {video}" in text
    metrics = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert metrics["episode/error_rate"] == 1.0
