"""Turn a model's crop_video arguments into a clamped ``(start, end)`` window, or say why not.

docs/PROTOCOL.md §3: numbers, numeric strings, ``MM:SS`` and ``HH:MM:SS`` are accepted;
``start``/``end`` are aliases of ``start_time``/``end_time``; times are clamped to
``[0, duration]``; NaN/inf, non-numbers, ``start >= end`` after clamping and windows shorter than
one frame are errors. Each error is an ``InvalidWindowError`` whose message is written for the
model: it names the argument, repeats the value and gives the valid range, so the model can
correct the next call.
"""

from __future__ import annotations

import math
import re
from typing import Any

from paravt.video.errors import InvalidWindowError

__all__: list[str] = []  # nothing here is for the other rooms

_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_CLOCK = re.compile(r"^(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")
_UNIT = re.compile(r"\s*(s|sec|secs|second|seconds)$", re.IGNORECASE)

ALIASES = {"start_time": ("start_time", "start"), "end_time": ("end_time", "end")}
KNOWN = {"video_path", "start_time", "end_time", "start", "end"}


def _range_text(duration: float | None) -> str:
    if duration is None:
        return "a time in seconds from 0"
    return f"a time between 0.0 and {duration:.1f} seconds"


def _not_a_time(argument: str, value: Any, duration: float | None, why: str) -> InvalidWindowError:
    return InvalidWindowError(
        f"crop_video: {argument}={value!r} {why}. Give {_range_text(duration)}, as a number "
        f'(e.g. 75 or 75.5) or as "MM:SS" / "HH:MM:SS".',
        argument,
        value,
        None if duration is None else (0.0, duration),
    )


def parse_time(value: Any, argument: str, duration: float | None = None) -> float:
    """Seconds from a number, a numeric string, ``MM:SS`` or ``HH:MM:SS`` (not yet clamped)."""
    if isinstance(value, bool) or value is None:
        raise _not_a_time(argument, value, duration, "is not a time")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        text = _UNIT.sub("", value.strip()).strip()
        if _NUMBER.match(text):
            seconds = float(text)
        else:
            m = _CLOCK.match(text)
            if not m:
                raise _not_a_time(argument, value, duration, "is not a time")
            hours, minutes, secs = m.group(1), int(m.group(2)), float(m.group(3))
            if secs >= 60 or (hours is not None and minutes >= 60):
                raise _not_a_time(argument, value, duration, "is not a valid clock time")
            seconds = (int(hours) * 3600 if hours else 0) + minutes * 60 + secs
    else:
        raise _not_a_time(argument, value, duration, f"is a {type(value).__name__}, not a time")
    if not math.isfinite(seconds):
        raise _not_a_time(argument, value, duration, "is not a finite number")
    return seconds


def _pick(arguments: dict, canonical: str, warnings: list[str]) -> tuple[str, Any]:
    present = [k for k in ALIASES[canonical] if k in arguments]
    if not present:
        raise InvalidWindowError(
            f"crop_video: missing required argument {canonical} (seconds from the start of the "
            f"video). Call crop_video(video_path, start_time, end_time).",
            canonical,
            None,
        )
    if len(present) > 1 and arguments[present[0]] != arguments[present[1]]:
        warnings.append(f"both {present[0]} and {present[1]} given; used {present[0]}")
    return present[0], arguments[present[0]]


def read_window(arguments: Any) -> tuple[float, float, list[str]]:
    """Parse (not clamp) the window of a call: ``(start, end, warnings)``; needs no video."""
    warnings: list[str] = []
    if not isinstance(arguments, dict):
        raise InvalidWindowError(
            f"crop_video: arguments must be an object with start_time and end_time, got "
            f"{arguments!r}",
            "arguments",
            arguments,
        )
    s_name, s_raw = _pick(arguments, "start_time", warnings)
    e_name, e_raw = _pick(arguments, "end_time", warnings)
    start = parse_time(s_raw, s_name)
    end = parse_time(e_raw, e_name)
    unknown = sorted(set(map(str, arguments)) - KNOWN)
    if unknown:
        warnings.append("ignored unknown arguments: " + ", ".join(unknown))
    return start, end, warnings


def clamp_window(
    start: float,
    end: float,
    duration: float,
    min_length: float,
    names: tuple[str, str] = ("start_time", "end_time"),
) -> tuple[float, float, list[str]]:
    """Clamp a parsed window to ``[0, duration]`` and check it is long enough."""
    s_name, e_name = names
    valid = (0.0, float(duration))
    warnings: list[str] = []
    if start >= duration:
        raise InvalidWindowError(
            f"crop_video: {s_name}={start:g} is at or after the end of the video "
            f"(it is {duration:.1f} seconds long). Choose {s_name} between 0.0 and {duration:.1f}.",
            s_name,
            start,
            valid,
        )
    if end <= 0:
        raise InvalidWindowError(
            f"crop_video: {e_name}={end:g} is at or before the start of the video. Choose "
            f"{e_name} between 0.0 and {duration:.1f} seconds, after {s_name}.",
            e_name,
            end,
            valid,
        )
    s = min(max(start, 0.0), duration)
    e = min(max(end, 0.0), duration)
    if s != start:
        warnings.append(f"{s_name}={start:g} clamped to {s:.1f}")
    if e != end:
        warnings.append(f"{e_name}={end:g} clamped to {e:.1f} (the video is {duration:.1f} s long)")
    if s >= e:
        raise InvalidWindowError(
            f"crop_video: {s_name}={start:g} is not before {e_name}={end:g}. {e_name} must be "
            f"greater than {s_name}; both between 0.0 and {duration:.1f} seconds.",
            e_name,
            end,
            valid,
        )
    if e - s < min_length:
        raise InvalidWindowError(
            f"crop_video: the window {s:.3f}-{e:.3f} s is shorter than one frame "
            f"({min_length:.3f} s). Make {e_name} at least {s_name} + {min_length:.3f}; a window of "
            "1 second or more gives more frames.",
            e_name,
            end,
            (min(s + min_length, duration), duration),
        )
    return s, e, warnings
