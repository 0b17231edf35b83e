"""FFmpeg's error lines are collected per thread, and collecting them changes nothing else.

``paravt.video.ffmpeg_log`` installs one av_log callback in torchcodec's libavutil. What must
hold: the lines of a decode reach the thread that decodes and no other; a clean decode collects
none; PyAV (its own FFmpeg build) still decodes; the callback object stays alive; a Ctrl-C
that lands while FFmpeg logs is not lost.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
import threading

import media
import pytest

from paravt.video import ffmpeg_log

av = pytest.importorskip("av")


@pytest.fixture(scope="module")
def two_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ffmpeg_log")
    missing = media.build(folder, {"inband_pps.mp4": media.inband_pps_mp4})
    if missing:
        pytest.skip(missing["inband_pps.mp4"])
    clean = media.testsrc2_720p(folder / "clean.mp4")
    return folder / "inband_pps.mp4", clean


def _cold_decode(path, index: int) -> None:
    """A decoder that seeks straight past the first IDR without having seen the first packet:
    on the in-band-PPS file, FFmpeg logs errors."""
    from torchcodec.decoders import VideoDecoder

    with contextlib.suppress(RuntimeError):
        VideoDecoder(str(path), seek_mode="exact").get_frames_at([index])


def test_error_lines_reach_the_decoding_thread_only(two_files):
    if not ffmpeg_log.available():
        pytest.skip("FFmpeg's log cannot be read on this platform")
    broken, clean = two_files
    seen: dict[str, list[str]] = {}

    def run(name: str, path, index: int) -> None:
        with ffmpeg_log.errors() as lines:
            for _ in range(3):
                _cold_decode(path, index)
        seen[name] = list(lines)

    threads = [
        threading.Thread(target=run, args=("broken", broken, 200)),
        threading.Thread(target=run, args=("clean", clean, 50)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["broken"] and any("error while decoding" in x for x in seen["broken"])
    assert seen["clean"] == []
    # outside a block nothing is collected, and nested blocks hand their lines outwards
    _cold_decode(broken, 200)
    with ffmpeg_log.errors() as outer, ffmpeg_log.errors() as inner:
        _cold_decode(broken, 200)
    assert inner and outer == inner
    assert ffmpeg_log._state["thunk"] is not None and ffmpeg_log._state["swallowed"] == 0
    with av.open(str(broken)) as box:  # PyAV's own FFmpeg, untouched
        assert sum(1 for _ in box.decode(video=0)) == 300


#: a process in which ctypes reports an interrupt it could not raise out of the log callback
#: (what it does when SIGINT lands as the callback starts, in C: tests/eval's Ctrl-C test met it
#: as "Exception ignored on calling ctypes callback function" and an eval that ran to its end);
#: the report is made the way ctypes makes it, through ``sys.unraisablehook``
LOST_INTERRUPT = textwrap.dedent(
    """
    import sys, time, types
    from paravt.video import ffmpeg_log
    assert ffmpeg_log.available()
    lost = types.SimpleNamespace(
        exc_type=KeyboardInterrupt, exc_value=KeyboardInterrupt(), exc_traceback=None,
        err_msg="Exception ignored on calling ctypes callback function",
        object=ffmpeg_log._on_log,
    )
    try:
        sys.unraisablehook(lost)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            pass
        print("went on")
    except KeyboardInterrupt:
        print("interrupted")
    """
)


def test_a_ctrl_c_lost_in_the_log_callback_reaches_the_main_thread():
    """Before: the interrupt was printed as ignored and the program went on (an interrupted
    eval ran to its end and exited 0)."""
    if not ffmpeg_log.available():
        pytest.skip("FFmpeg's log cannot be read on this platform")
    done = subprocess.run(
        [sys.executable, "-c", LOST_INTERRUPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "interrupted", done.stdout + done.stderr
    assert "Exception ignored" not in done.stderr
