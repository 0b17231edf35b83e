"""crop_video argument coercion and validation (docs/PROTOCOL.md §3): each bad input, a clear
message."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from paravt.tools.arguments import clamp_window, parse_time, read_window
from paravt.video import InvalidWindowError


@pytest.mark.parametrize(
    "value, seconds",
    [
        (12, 12.0),
        (12.5, 12.5),
        ("12", 12.0),
        (" 12.5 ", 12.5),
        ("12s", 12.0),
        ("7 seconds", 7.0),
        ("01:30", 90.0),
        ("1:30", 90.0),
        ("00:01:30.5", 90.5),
        ("1:02:03", 3723.0),
        ("-4", -4.0),
        ("1e2", 100.0),
    ],
)
def test_accepted_time_forms(value, seconds):
    assert parse_time(value, "start_time") == seconds


@pytest.mark.parametrize(
    "value",
    [
        "abc",
        "",
        None,
        True,
        [1, 2],
        {"s": 1},
        "nan",
        float("nan"),
        float("inf"),
        "-inf",
        "1:75",
        "1:60:00",
        "12:34:56:78",
    ],
)
def test_rejected_time_forms_name_argument_and_value(value):
    with pytest.raises(InvalidWindowError) as info:
        parse_time(value, "end_time", duration=125.0)
    err = info.value
    assert err.argument == "end_time" and err.valid_range == (0.0, 125.0)
    assert f"end_time={value!r}" in str(err) and "125.0" in str(err)
    assert "MM:SS" in str(err)


def test_aliases_and_missing_arguments():
    assert read_window({"start": "0:10", "end": 20})[:2] == (10.0, 20.0)
    s, e, warns = read_window({"start_time": 1, "start": 5, "end_time": 9, "fps": 3})
    assert (s, e) == (1.0, 9.0)
    assert any("start_time" in w and "start" in w for w in warns)
    assert any("fps" in w for w in warns)
    with pytest.raises(InvalidWindowError, match="missing required argument end_time") as info:
        read_window({"video_path": "x.mp4", "start_time": 3})
    assert info.value.argument == "end_time"
    with pytest.raises(InvalidWindowError, match="arguments must be an object"):
        read_window("10-20")


def test_clamping_warns_and_keeps_the_window():
    s, e, warns = clamp_window(-5, 300, duration=120.0, min_length=1 / 30)
    assert (s, e) == (0.0, 120.0)
    assert any("start_time=-5 clamped" in w for w in warns)
    assert any("end_time=300 clamped" in w for w in warns)


@pytest.mark.parametrize(
    "start, end, argument, words",
    [
        (30, 20, "end_time", ["start_time=30 is not before end_time=20"]),
        (10, 10, "end_time", ["not before"]),
        (130, 140, "start_time", ["at or after the end of the video", "120.0"]),
        (-10, -1, "end_time", ["at or before the start"]),
        (10, 10.01, "end_time", ["shorter than one frame"]),
    ],
)
def test_unusable_windows(start, end, argument, words):
    with pytest.raises(InvalidWindowError) as info:
        clamp_window(start, end, duration=120.0, min_length=1 / 30)
    assert info.value.argument == argument
    assert info.value.valid_range is not None
    for w in words:
        assert w in str(info.value)


@settings(max_examples=200, deadline=None)
@given(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.floats(min_value=0.5, max_value=5000),
)
def test_any_window_is_clamped_inside_the_video_or_rejected(start, end, duration):
    try:
        s, e, _ = read_window({"start_time": start, "end_time": end})
        s, e, _ = clamp_window(s, e, duration, 1 / 30)
    except InvalidWindowError as err:
        assert err.argument in ("start_time", "end_time") and str(err).startswith("crop_video:")
        return
    assert math.isfinite(s) and math.isfinite(e)
    assert 0.0 <= s < e <= duration and e - s >= 1 / 30
