"""``paravt probe`` and ``paravt frames`` end to end (real decodes, real PNG)."""

from __future__ import annotations

import json

from PIL import Image

from paravt.cli.main import main


def test_probe_json_reports_the_scanned_metadata(video_path, capsys):
    path = video_path("torchcodec__var_fps_video.mp4")
    assert main(["probe", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["meta"]["num_frames"] == 300
    assert abs(out["meta"]["average_fps"] - 20.04) < 0.01
    assert out["config"] == {"device": "cpu"}


def test_frames_overview_and_windows_with_a_contact_sheet(gop_video, tmp_path, capsys):
    sheet = tmp_path / "sheet.png"
    assert main(["frames", str(gop_video), "-k", "6", "--mode", "keyframe", "--json"]) == 0
    over = json.loads(capsys.readouterr().out)["overview"]
    assert len(over["times"]) == 6 and over["size"] == [90, 160]
    argv = [
        "frames",
        str(gop_video),
        "--window",
        "2:6",
        "--window",
        "00:07,00:11",
        "--json",
        "--sheet",
        str(sheet),
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert [len(w["times"]) for w in out["windows"]] == [4, 4]
    assert out["windows"][1]["message"] == "4 frames from 7.0s to 11.0s."
    assert out["stats"]["opens"] == {str(gop_video): 0}  # the command's own open was reused
    img = Image.open(sheet)
    assert img.format == "PNG" and img.size[0] > 160 and img.size[1] > 90


def test_frames_user_errors_exit_2_with_one_line(gop_video, bad_files, capsys):
    assert main(["frames", str(gop_video), "--window", "1-2-3"]) == 2
    assert "--window '1-2-3'" in capsys.readouterr().err
    assert main(["frames", str(gop_video), "--window", "9:3"]) == 2
    assert "not before" in capsys.readouterr().err
    assert main(["probe", str(bad_files["empty"])]) == 2
    assert "empty" in capsys.readouterr().err
    assert main(["frames", str(gop_video), "--set", "mode=fast"]) == 2


def test_frames_takes_every_crop_config_key(gop_video, capsys):
    """``paravt frames`` windows run under the tool's own ``CropConfig`` (one definition), so no
    window knob can be forgotten: each one is a ``--set`` key and is recorded in the output."""
    from dataclasses import fields

    from paravt.tools import CropConfig

    overrides = {"skip_disposable": "false", "decoder_threads": "2", "max_frames": "4"}
    argv = ["frames", str(gop_video), "--window", "2:8", "--json"]
    for key, value in overrides.items():
        argv += ["--set", f"{key}={value}"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert {f.name for f in fields(CropConfig)} <= set(out["config"])
    assert out["config"]["skip_disposable"] is False and out["config"]["decoder_threads"] == 2
    assert len(out["windows"][0]["times"]) == 4  # max_frames (6 s at 1 fps) reached the tool
    assert out["stats"]["pictures_skipped"] == 0


def test_frames_shows_the_overview_the_engine_decodes(video_path, capsys):
    """``paravt frames -k 64`` decodes the overview the way infer does (one lane per core), so it
    shows the same frames, the same failures and the same damage as the model gets."""
    import torch

    from paravt.video import VideoSource
    from paravt.video.parallel import resolve_workers

    path = video_path("decord__corrupted.mp4")
    assert main(["frames", str(path), "-k", "64", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["config"]["workers"] == 0
    engine = VideoSource(path).overview(64, workers=resolve_workers(0))
    assert shown["overview"]["times"] == [round(t, 6) for t in engine.times]
    assert shown["overview"]["damaged"] == engine.damaged and engine.damaged
    assert shown["overview"]["failed"] == engine.failed
    one = VideoSource(path).overview(64, workers=1)
    assert torch.equal(one.data, engine.data)  # and the lanes change no pixel


def test_frames_sheet_draws_non_square_pixels_as_a_player_shows_them(tmp_path, capsys):
    """An anamorphic file (192x144 stored, pixels 4:3 wide) is drawn 256x144 on the contact
    sheet, as a player shows it, not squeezed to 192x144."""
    import media

    video = media.anamorphic_mp4(tmp_path / "wide.mp4")
    sheet = tmp_path / "sheet.png"
    argv = ["frames", str(video), "-k", "1", "--set", "thumb_width=1000", "--sheet", str(sheet)]
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["sample_aspect_ratio"] > 1.3
    # one thumbnail as wide as shown between 4-pixel margins (it was the stored width: squeezed)
    assert Image.open(sheet).size[0] == 4 + media.ANAMORPHIC_SHOWN[0] + 4


def test_frames_prints_the_damage_ffmpeg_reported(tmp_path, capsys):
    """A file whose decode logs FFmpeg errors (it claims x264 core 142: ``media.OLD_X264_KINDS``)
    shows a window after a later IDR with the damage warning, FFmpeg's line quoted, and the
    window's message says so as the model reads it."""
    import media
    import pytest

    missing = media.build(tmp_path, media.OLD_X264_KINDS)
    if "old_x264_444.mp4" in missing:
        pytest.skip(missing["old_x264_444.mp4"])
    path = tmp_path / "old_x264_444.mp4"
    assert main(["frames", str(path), "-k", "8", "--window", "7.5:9"]) == 0
    shown = capsys.readouterr().out
    warnings = [line for line in shown.splitlines() if line.strip().startswith("warning:")]
    assert len([w for w in warnings if "decoded after damage" in w and "(FFmpeg: " in w]) == 1
    assert "damaged part of the file" in shown  # the window's message, as the model reads it
