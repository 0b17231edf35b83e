"""FFmpeg's error lines, per decode: what the decoder said while it concealed damage.

Why: FFmpeg returns a concealed frame (green or smeared blocks) as if nothing happened; the only
sign is a line on its log ("top block unavailable for requested intra mode", "error while
decoding MB ...", "concealing N DC, N AC, N MV errors"). torchcodec keeps FFmpeg's log quiet and
offers no way to read it, so this module installs a log callback in the libavutil that
torchcodec's core library is linked against (found through that library itself, so PyAV's own
FFmpeg build in the same process is never touched) and collects the error lines of the calling
thread while a ``errors()`` block is open.

Safety, the reasons it is written as it is:

* One callback for the process, installed once and kept in a module global, so ctypes never
  frees the C thunk FFmpeg calls; restored to FFmpeg's default at interpreter exit, before Python
  goes away under a late log call.
* Every message is handed on to FFmpeg's default callback unchanged (it still honours the log
  level torchcodec set), so what anybody else sees of FFmpeg's log does not change.
* Lines are collected per thread (``threading.local``): parallel lanes each see their own
  decoder's lines. FFmpeg logs from the thread that decodes when it has one thread per decoder;
  a decoder with more FFmpeg threads can log from threads of its own, whose lines are handed on
  but not collected (``collects(num_threads)`` says where capture holds).
* The callback never raises into C (anything unexpected is swallowed and counted) and formats
  with FFmpeg's own ``av_log_format_line2``, which copies the argument list, so the default
  callback gets it intact.
* Ctrl-C is never lost in it. Python checks for a pending signal when a function starts, so a
  SIGINT that lands while FFmpeg logs from the main thread raises ``KeyboardInterrupt`` at the
  callback's first line, where ctypes can only print "Exception ignored" and drop it: an eval
  interrupted that way ran to its end and exited 0. A ``sys.unraisablehook`` (chained to the one
  it replaces) sees that case alone and hands the interrupt back to the main thread: a timer
  thread calls ``_thread.interrupt_main()`` a moment later, once the callback has returned (if
  it lands in the callback once more, the same happens again, until it lands outside).
* The callback needs the GIL; torchcodec's decode calls release it (``video.parallel``), so a
  thread logging from inside a decode never waits on a thread that holds the GIL and waits on it.

Where the callback cannot be installed (another platform, a torchcodec whose core library is not
found), ``errors()`` collects nothing and ``available()`` says so: decoding is as before, without
the log-based damage check.
"""

from __future__ import annotations

import _thread
import atexit
import ctypes
import logging
import platform
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__: list[str] = []  # nothing here is for the other rooms

logger = logging.getLogger(__name__)

#: FFmpeg log levels: AV_LOG_ERROR and everything more severe (FATAL 8, PANIC 0) are collected.
_AV_LOG_ERROR = 16
_LINE_BYTES = 1024
#: how long after a lost Ctrl-C it is raised again: long enough for the callback to return
_INTERRUPT_AGAIN_S = 0.05
#: Error lines FFmpeg logs when a decode starts at a restart point without concealing anything,
#: so they are not collected: "mmco: unref short failure" is a reference-marking command of an
#: open-GOP stream that names a picture from before the recovery point, which this decoder never
#: had (the frames it returns equal a straight decode's: tests/video/test_frame_equality.py,
#: ``open_gop.mp4``; counted there, none may send a clean file to the straight decode).
BENIGN = ("mmco: unref short failure",)
#: av_log callback: void (*)(void *avcl, int level, const char *fmt, va_list vl); on x86-64 and
#: AArch64 Linux a va_list argument is passed as a pointer.
_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)

_local = threading.local()
_install_lock = threading.Lock()
_state: dict = {"tried": False, "lib": None, "thunk": None, "swallowed": 0, "hook": None}


def _core_library() -> str | None:
    """The path of the torchcodec core library this process loaded (the one linked against the
    libavutil torchcodec decodes with), from the process's memory map."""
    import torchcodec.decoders  # noqa: F401 - loads the core library

    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip().split(" ")[-1]
                if "libtorchcodec_core" in path and path.endswith(".so"):
                    return path
    except OSError:
        return None
    return None


def _on_log(avcl, level, fmt, vl) -> None:
    lib = _state["lib"]
    try:
        sink = getattr(_local, "sink", None)
        if sink is not None and 0 <= level <= _AV_LOG_ERROR:
            line = ctypes.create_string_buffer(_LINE_BYTES)
            prefix = ctypes.c_int(1)
            lib.av_log_format_line2(avcl, level, fmt, vl, line, _LINE_BYTES, ctypes.byref(prefix))
            text = line.value.decode("utf-8", "replace").strip()
            if text and not text.endswith(BENIGN):
                sink.append(text)
    except BaseException:  # noqa: BLE001 - never raise into FFmpeg
        _state["swallowed"] += 1
    lib.av_log_default_callback(avcl, level, fmt, vl)


def _interrupts_back(unraisable) -> None:
    """``sys.unraisablehook``: a ``KeyboardInterrupt`` that ctypes could not raise out of
    ``_on_log`` goes back to the main thread (module doc); anything else to the previous hook."""
    lost_interrupt = (
        unraisable.exc_type is not None
        and issubclass(unraisable.exc_type, KeyboardInterrupt)
        and unraisable.object is _on_log
    )
    if lost_interrupt:  # raised here or at once, it would be lost again (still in C): later
        later = threading.Timer(_INTERRUPT_AGAIN_S, _thread.interrupt_main)
        later.daemon = True
        later.start()
        return
    (_state["hook"] or sys.__unraisablehook__)(unraisable)


def _install() -> bool:
    with _install_lock:
        if _state["tried"]:
            return _state["lib"] is not None
        _state["tried"] = True
        if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
            return False
        try:
            path = _core_library()
            if path is None:
                return False
            # dlsym on this handle searches the core library's own dependencies first: its
            # libavutil, not PyAV's
            lib = ctypes.CDLL(path)
            lib.av_log_format_line2.argtypes = [
                ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
                ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(ctypes.c_int),
            ]  # fmt: skip
            lib.av_log_default_callback.argtypes = [
                ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p,
            ]  # fmt: skip
            lib.av_log_set_callback.argtypes = [ctypes.c_void_p]
            thunk = _CALLBACK(_on_log)
            _state["lib"], _state["thunk"] = lib, thunk
            _state["hook"], sys.unraisablehook = sys.unraisablehook, _interrupts_back
            lib.av_log_set_callback(ctypes.cast(thunk, ctypes.c_void_p))
            atexit.register(_uninstall)
            return True
        except (OSError, AttributeError, ImportError) as e:
            logger.info("FFmpeg's log cannot be read here (%s); damage is found without it", e)
            _state["lib"] = None
            return False


def _uninstall() -> None:
    lib = _state["lib"]
    if lib is not None:
        lib.av_log_set_callback(ctypes.cast(lib.av_log_default_callback, ctypes.c_void_p))
    if sys.unraisablehook is _interrupts_back:
        sys.unraisablehook = _state["hook"] or sys.__unraisablehook__


def plain(line: str) -> str:
    """An FFmpeg log line without its ``[h264 @ 0x55d0c8]`` prefix (a memory address that
    differs on every run), as a person is shown it."""
    return line.split("] ", 1)[1] if line.startswith("[") and "] " in line else line


def available() -> bool:
    """Whether FFmpeg's error lines are collected in this process (installs the callback)."""
    return _install()


def collects(num_threads: int) -> bool:
    """Whether ``errors()`` sees every error line of a decoder with ``num_threads`` FFmpeg
    threads (one: it logs from the calling thread)."""
    return num_threads == 1 and _install()


@contextmanager
def errors() -> Iterator[list[str]]:
    """The FFmpeg error lines this thread's decoding logs inside the block (a nested block's
    lines also reach the outer one)."""
    _install()
    outer = getattr(_local, "sink", None)
    sink: list[str] = []
    _local.sink = sink
    try:
        yield sink
    finally:
        _local.sink = outer
        if outer is not None:
            outer.extend(sink)
