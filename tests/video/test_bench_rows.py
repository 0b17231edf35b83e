"""The tool-execution benchmark skips a row it cannot run, with the reason, and finishes."""

from __future__ import annotations

import json
import random
import re
import subprocess
from pathlib import Path

import pytest
from repo_files import load_repo_file


def _bench():
    return load_repo_file("benchmarks/bench_tool_exec.py", "bench_tool_exec")


def test_missing_encoder_undecodable_file_and_unknown_row_are_skipped_with_reasons(tmp_path):
    bench = _bench()
    bench.CODECS["no_such_encoder"] = {
        "encoder": "libnosuchcodec", "args": [], "gop_s": 2, "source": "testsrc2", "ext": "mp4",
    }  # fmt: skip
    not_video = tmp_path / "notes.mp4"
    not_video.write_text("this is not a video\n")
    out = tmp_path / "bench.json"
    code = bench.main([
        "--codecs", "no_such_encoder,not_a_row", "--video", str(not_video), "--minutes", "0.1",
        "--cache-dir", str(tmp_path / "cache"), "--out", str(out),
    ])  # fmt: skip
    assert code == 0
    rows = json.loads(out.read_text())["rows"]
    assert "libnosuchcodec" in rows["no_such_encoder"]["skipped"]
    assert "unknown codec row 'not_a_row'" in rows["not_a_row"]["skipped"]
    assert rows["file:notes.mp4"]["skipped"].startswith(f"cannot decode {not_video}")
    machine = json.loads(out.read_text())["machine"]
    # other processes' CPU (machine busy time less this run's own): a number, and the flag
    # follows it, not the load average, which counts the benchmark's own threads
    assert machine["foreign_cpu_share"] >= 0
    assert machine["shared"] is (machine["foreign_cpu_share"] > bench.SHARED_SHARE)


def _truncated_mp4(folder: Path) -> Path:
    """A 6 s x264 mp4 with its index in front (``+faststart``), cut in the middle: it opens and
    its first half decodes, but the header promises frames the file no longer has."""
    from media import ffmpeg_exe

    full = folder / "whole.mp4"
    subprocess.run(
        [ffmpeg_exe(), "-y", "-loglevel", "error", "-f", "lavfi", "-i",
         "testsrc2=size=320x180:rate=30", "-t", "6", "-c:v", "libx264", "-preset", "ultrafast",
         "-g", "30", "-pix_fmt", "yuv420p", "-movflags", "+faststart", str(full)],
        check=True,
    )  # fmt: skip
    data = full.read_bytes()
    cut = folder / "cut_in_half.mp4"
    cut.write_bytes(data[: len(data) // 2])
    return cut


def test_a_file_that_opens_but_fails_to_decode_later_skips_its_row_and_the_run_finishes(tmp_path):
    bench = _bench()
    cut = _truncated_mp4(tmp_path)
    from paravt.video import VideoSource

    with VideoSource(cut) as src:  # the row's open-and-overview guard lets it through
        assert len(src.overview(2)) == 2 and src.meta.duration < 4.0
    out = tmp_path / "bench.json"
    code = bench.main([
        "--codecs", "", "--video", str(cut), "--smoke", "--cache-dir", str(tmp_path / "cache"),
        "--out", str(out),
    ])  # fmt: skip
    assert code == 0
    result = json.loads(out.read_text())
    row = result["rows"]["file:cut_in_half.mp4"]
    assert re.match(r"[A-Z]\w*(Error|Exception): ", row["skipped"]), row  # "<Type>: <message>"
    assert not any(k.startswith("cores") for k in row)
    assert result["complete"] is True


def test_a_failing_row_is_skipped_and_the_json_is_written_after_every_row(tmp_path, monkeypatch):
    bench = _bench()
    monkeypatch.setattr(bench, "ensure_video", lambda cache, codec, *a: (tmp_path, {"made": codec}))
    calls = []

    def run_row(video, args, cores, workers, cases):
        calls.append(cases)
        if len(calls) == 1:
            raise ValueError("boom")
        if len(calls) == 2:
            return {"video": {}, "cores": cores, "workers": workers, "cases": {}}
        raise KeyboardInterrupt  # the run stops during its third row

    monkeypatch.setattr(bench, "run_row", run_row)
    out = tmp_path / "bench.json"
    with pytest.raises(KeyboardInterrupt):
        bench.main(["--codecs", "x264_medium,vp9,x265", "--out", str(out)])
    result = json.loads(out.read_text())  # written after the second row, before the third
    assert result["complete"] is False
    assert result["rows"]["x264_medium"] == {"skipped": "ValueError: boom",
                                             "encoding": {"made": "x264_medium"}}  # fmt: skip
    assert result["rows"]["vp9"]["encoding"] == {"made": "vp9"} and "x265" not in result["rows"]


def test_windows_fit_inside_a_short_video_and_are_unchanged_on_a_long_one():
    bench = _bench()
    for duration in (0.0, 1.5, 9.0):  # shorter than every length: the whole video
        assert set(bench.pick_windows(random.Random(1), duration, 20, (10, 20))) == {
            (0.0, duration)
        }
    for start, end in bench.pick_windows(random.Random(1), 31.5, 50, (10, 20)):
        assert 0.0 <= start and end <= 31.5 - 1 and round(end - start, 6) in (10, 20)
    # the committed rows' draws (seed 0, 10-minute videos) are those of the unclamped rule
    assert bench.pick_windows(random.Random(0), 600.0, 3) == [
        (435.1, 460.1), (23.2, 48.2), (276.5, 306.5),
    ]  # fmt: skip


def test_cached_videos_are_named_by_their_encode_settings(tmp_path, monkeypatch):
    bench = _bench()
    made = []

    def fake_run(cmd):  # "encode": the output exists afterwards
        made.append(cmd)
        Path(cmd[-1]).write_bytes(b"")

    monkeypatch.setattr(bench, "_run", fake_run)
    monkeypatch.setattr(bench, "footage_pieces", lambda cache, size: (tmp_path / "p.mkv", []))
    first, info = bench.ensure_video(tmp_path, "x264_veryfast_gop2", 1.0, 10, "64x36")
    assert info["settings_tag"] in first.name and "-sc_threshold" in info["encoder_args"]
    assert len(made) == 2  # the unit, then the stream copy to length
    assert bench.ensure_video(tmp_path, "x264_veryfast_gop2", 1.0, 10, "64x36")[0] == first
    assert len(made) == 2  # cached: nothing encoded again
    monkeypatch.setitem(
        bench.CODECS["x264_veryfast_gop2"], "args", ["-preset", "faster", "-sc_threshold", "0"]
    )
    second, _ = bench.ensure_video(tmp_path, "x264_veryfast_gop2", 1.0, 10, "64x36")
    assert second != first and len(made) == 4  # another setting: another file, encoded anew
    assert "-preset faster" in " ".join(made[2])


def test_core_scaling_fit_is_amdahl_through_both_points():
    bench = _bench()
    fit = bench.predict_cores(10.0, 6.0, 16)  # parallel 8 s, serial 2 s
    assert fit["serial_s"] == 2.0 and fit["parallel_s"] == 8.0
    assert fit["predicted_wall_s"] == 2.5
    assert bench.predict_cores(10.0, 6.0, 16, lanes=4)["predicted_wall_s"] == 4.0
    assert bench.predict_cores(5.0, 5.5, 16)["predicted_wall_s"] == 5.0  # slower on 2: all serial
