"""The tool-execution benchmark skips a row it cannot run, with the reason, and finishes."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_tool_exec.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_tool_exec_under_test", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def test_core_scaling_fit_is_amdahl_through_both_points():
    bench = _bench()
    fit = bench.predict_cores(10.0, 6.0, 16)  # parallel 8 s, serial 2 s
    assert fit["serial_s"] == 2.0 and fit["parallel_s"] == 8.0
    assert fit["predicted_wall_s"] == 2.5
    assert bench.predict_cores(10.0, 6.0, 16, lanes=4)["predicted_wall_s"] == 4.0
    assert bench.predict_cores(5.0, 5.5, 16)["predicted_wall_s"] == 5.0  # slower on 2: all serial
