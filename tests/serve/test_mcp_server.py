"""``paravt serve-tools`` through the MCP SDK's real client over stdio, started the way a
harness starts it: ``python LAUNCHER`` with no arguments (the file ``--write-entry`` writes).

Each test opens one session (one server process): the schema and the frames (equal, pixel for
pixel after the same PNG encoding, to what the episode engine hands a model for that window),
8 concurrent calls, every bad-argument case as a tool error with the server still serving, and
every path escape refused without the file outside the roots ever being opened (inotify watches
that folder for any open).
"""

from __future__ import annotations

import asyncio
import base64
import ctypes
import ctypes.util
import importlib.util
import io
import os
import shutil
import struct
import sys

import pytest

if importlib.util.find_spec("mcp") is None:
    # CI's main environment installs the extra (the README's test command): a missing SDK there
    # fails instead of passing as a skip; the vLLM environment (which has vLLM) does not install it
    if os.environ.get("CI") == "true" and importlib.util.find_spec("vllm") is None:
        raise RuntimeError("CI=true but the MCP SDK is missing: pip install -e '.[mcp]'")
    pytest.skip("needs the MCP SDK: pip install -e '.[mcp]'", allow_module_level=True)

from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

from paravt.agent.config import CropSettings  # noqa: E402
from paravt.serve.config import ServeToolsConfig  # noqa: E402
from paravt.serve.launcher import write_launcher  # noqa: E402

#: The small budget of the agent tests (784 - 4096 px, 4 frames a window): same code paths.
CROP = CropSettings(min_pixels=784, max_pixels=4096, max_frames=4)


@pytest.fixture(scope="module")
def served(tmp_path_factory, video_path):
    """A video root holding a real video, a folder outside it holding another, a symlink in the
    root that leads out, and the launcher of a server confined to the root."""
    base = tmp_path_factory.mktemp("serve")
    root, outside = base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    shutil.copy(video_path("decord__flipping_a_pancake.mkv"), root / "pancake.mkv")
    shutil.copy(video_path("torchcodec__testsrc2.mp4"), outside / "secret.mp4")
    (root / "link.mp4").symlink_to(outside / "secret.mp4")
    cfg = ServeToolsConfig(video_roots=[str(root)], crop=CROP, timeout_s=60)
    launcher = write_launcher(cfg, base / "paravt_tools.py")
    return {"root": root, "outside": outside, "launcher": launcher}


def session(launcher, body):
    """Run ``body(session)`` against a fresh server started as ``python LAUNCHER``."""

    async def main():
        params = StdioServerParameters(command=sys.executable, args=[str(launcher)])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return await body(s)

    return asyncio.run(main())


def _text(result) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


def _pngs(result):
    import numpy as np
    from PIL import Image

    return [
        np.asarray(Image.open(io.BytesIO(base64.b64decode(c.data))).convert("RGB"))
        for c in result.content
        if c.type == "image"
    ]


def _engine_window_frames(tiny_qwen3_dir, video: str, start: float, end: float):
    """The frames the episode engine puts in the tool turn of one crop_video call."""
    from transformers import AutoProcessor

    from paravt.agent.config import EngineConfig
    from paravt.agent.engine import EpisodeEngine
    from paravt.backends.scripted import ScriptedBackend
    from paravt.schema.episodes import EpisodeInput

    call = (
        '<tool_call>{"name": "crop_video", "arguments": {"video_path": "v", '
        f'"start_time": {start}, "end_time": {end}}}}}</tool_call>'
    )
    backend = ScriptedBackend(
        [call, "<answer>A</answer>"], processor=AutoProcessor.from_pretrained(tiny_qwen3_dir)
    )
    cfg = EngineConfig(frames=2, min_pixels=784, max_pixels=4096, crop=CROP)
    [rec] = EpisodeEngine(backend, cfg, frames_at_budget=True).run(
        [EpisodeInput("e", video, "Q?", ["a", "b"])]
    )
    assert rec.status == "ok" and rec.calls[0].status == "ok", rec.error
    return [it for it in rec.stream.images if it.source == "tool"], rec.calls[0]


def test_schema_frames_equal_to_the_engine_and_eight_concurrent_calls(served, tiny_qwen3_dir):
    from paravt.serve.calls import encode_png

    async def body(s):
        tools = {t.name: t for t in (await s.list_tools()).tools}
        one = await s.call_tool(
            "crop_video", {"video_path": "pancake.mkv", "start_time": 2, "end_time": "0:07"}
        )
        info = await s.call_tool("video_info", {"video_path": "pancake.mkv"})
        many = await asyncio.gather(
            *[
                s.call_tool(
                    "crop_video",
                    {"video_path": "pancake.mkv", "start_time": i, "end_time": i + 2.5},
                )
                for i in range(8)
            ]
        )
        return tools, one, info, many

    tools, one, info, many = session(served["launcher"], body)
    assert set(tools) == {"crop_video", "video_info"}
    schema = tools["crop_video"].input_schema
    assert schema["required"] == ["video_path", "start_time", "end_time"]
    assert schema["properties"]["max_frames"]["maximum"] == 4
    assert tools["video_info"].input_schema["required"] == ["video_path"]

    assert not one.is_error, _text(one)
    items, call = _engine_window_frames(tiny_qwen3_dir, str(served["root"] / "pancake.mkv"), 2, 7)
    got = _pngs(one)
    assert len(got) == len(items) == 4
    times = one.structured_content["times"]
    assert times == pytest.approx(call.times, abs=1e-3)
    assert "Frame times (seconds): " + ", ".join(f"{t:.2f}" for t in call.times) in _text(one)
    for n, (item, frame) in enumerate(zip(items, got, strict=True)):
        want = item.data.permute(1, 2, 0).numpy()
        assert frame.shape == want.shape and frame.shape[0] * frame.shape[1] <= 4096
        assert (frame == want).all()  # pixel for pixel
        assert base64.b64decode(one.content[1 + n].data) == encode_png(item.data)

    assert not info.is_error
    assert info.structured_content["width"] == 426 and info.structured_content["height"] == 240
    assert info.structured_content["duration"] == pytest.approx(10.3, abs=0.2)

    assert len(many) == 8 and not any(r.is_error for r in many)
    starts = [r.structured_content["start"] for r in many]
    assert starts == [float(i) for i in range(8)]
    counts = {len(_pngs(r)) for r in many}
    assert len(counts) == 1 and counts.pop() >= 2  # same window length, same frame count


BAD = [
    ({"start_time": 6, "end_time": 3}, "not before end_time"),
    ({"start_time": 500, "end_time": 600}, "at or after the end of the video"),
    ({"start_time": "soon", "end_time": 5}, "start_time='soon' is not a time"),
    ({"start_time": 1}, "missing required argument end_time"),
    ({"start_time": 1, "end_time": 5, "max_frames": 99}, "max_frames=99 is not allowed"),
    ({"start_time": 1, "end_time": 5, "max_frames": "all"}, "max_frames='all' is not allowed"),
]


class _OpenWatch:
    """inotify on a folder: did anything open (or read) a file in it?"""

    IN_ACCESS, IN_OPEN = 0x1, 0x20

    def __init__(self, folder):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK)
        if self.fd < 0:
            pytest.skip("inotify is not available here")
        wd = libc.inotify_add_watch(self.fd, str(folder).encode(), self.IN_OPEN | self.IN_ACCESS)
        assert wd >= 0, ctypes.get_errno()

    def events(self) -> list[int]:
        try:
            data = os.read(self.fd, 65536)
        except BlockingIOError:
            return []
        masks, at = [], 0
        while at < len(data):
            _, mask, _, length = struct.unpack_from("iIII", data, at)
            masks.append(mask)
            at += 16 + length
        return masks

    def close(self):
        os.close(self.fd)


def _escapes(root, outside) -> dict[str, str]:
    return {
        "absolute outside": str(outside / "secret.mp4"),
        "dot-dot": "../outside/secret.mp4",
        "dot-dot inside an absolute path": str(root / ".." / "outside" / "secret.mp4"),
        "symlink out": "link.mp4",
        "absolute symlink out": str(root / "link.mp4"),
    }


@pytest.fixture(scope="module")
def refused(served):
    """One session (one server start) for every call that must be refused: each bad argument
    case, an unknown tool, each path escape under inotify, then a good call after them all."""
    root, outside = served["root"], served["outside"]
    watch = _OpenWatch(outside)

    async def body(s):
        bad = []
        for args, _ in BAD:
            bad.append(await s.call_tool("crop_video", {"video_path": "pancake.mkv", **args}))
        unknown = await s.call_tool("no_such_tool", {})
        escapes = {}
        for name, path in _escapes(root, outside).items():
            args = {"video_path": path, "start_time": 0, "end_time": 4}
            escapes[name] = (
                await s.call_tool("crop_video", args),
                await s.call_tool("video_info", {"video_path": path}),
            )
        after = await s.call_tool(
            "crop_video", {"video_path": str(root / "pancake.mkv"), "start_time": 1, "end_time": 5}
        )
        return {"bad": bad, "unknown": unknown, "escapes": escapes, "after": after}

    try:
        out = session(served["launcher"], body)
        out["opened"] = watch.events()
        with open(outside / "secret.mp4", "rb") as fh:  # the watch itself sees an open
            fh.read(1)
        out["watch_sees"] = watch.events()
    finally:
        watch.close()
    return out


def test_bad_arguments_are_tool_errors_and_the_server_keeps_serving(refused):
    for (_, needle), r in zip(BAD, refused["bad"], strict=True):
        assert r.is_error and needle in _text(r), _text(r)
        assert not _pngs(r)
    assert refused["unknown"].is_error
    assert "unknown tool 'no_such_tool'" in _text(refused["unknown"])
    after = refused["after"]  # after every refusal, an absolute path inside the root is served
    assert not after.is_error and len(_pngs(after)) == 4


def test_path_escapes_are_refused_and_never_open_the_file(refused):
    assert set(refused["escapes"]) == {
        "absolute outside",
        "dot-dot",
        "dot-dot inside an absolute path",
        "symlink out",
        "absolute symlink out",
    }
    for name, pair in refused["escapes"].items():
        for r in pair:
            text = _text(r)
            assert r.is_error and not _pngs(r), (name, text)
            assert "outside the video roots" in text or "'..' is not allowed" in text, (name, text)
    assert refused["watch_sees"], "the inotify watch saw no open of its own"
    assert refused["opened"] == [], "a file outside the video roots was opened"


def test_write_entry_records_the_settings_and_a_missing_root_is_refused(tmp_path, capsys):
    from paravt.cli.main import main

    entry = tmp_path / "tools.py"
    code = main(
        ["serve-tools", "--video-root", str(tmp_path), "--write-entry", str(entry),
         "--set", "crop.max_frames=8", "--set", "timeout_s=5"]
    )  # fmt: skip
    assert code == 0 and capsys.readouterr().out.strip() == str(entry)
    text = entry.read_text()
    assert os.access(entry, os.X_OK) and repr(sys.executable) in text
    assert '"max_frames": 8' in text and '"timeout_s": 5.0' in text
    assert str(tmp_path.resolve()) in text
    assert main(["serve-tools", "--video-root", str(tmp_path / "nope")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_the_server_says_where_it_serves_and_logs_a_corrupt_region_in_one_line(
    bframes_video, tmp_path
):
    """stderr, the only stream a stdio server may talk on: first its "serving on" line; then,
    for a window over a damaged region that still returns frames, at most one warning line per
    logged failure and no traceback (the launcher logs through paravt.logs)."""
    import random

    root = tmp_path / "root"
    root.mkdir()
    data = bytearray(bframes_video.read_bytes())
    rng = random.Random(0)
    for i in range(len(data) // 3, len(data) // 3 + 20000):
        data[i] = rng.randrange(256)
    (root / "garbled.mp4").write_bytes(bytes(data))
    launcher = write_launcher(
        ServeToolsConfig(video_roots=[str(root)], crop=CROP, timeout_s=60), tmp_path / "l.py"
    )
    errlog = tmp_path / "stderr.txt"

    async def main():
        params = StdioServerParameters(command=sys.executable, args=[str(launcher)])
        with open(errlog, "w") as err:
            async with (
                stdio_client(params, errlog=err) as (read, write),
                ClientSession(read, write) as s,
            ):
                await s.initialize()
                return await s.call_tool(
                    "crop_video", {"video_path": "garbled.mp4", "start_time": 4, "end_time": 14}
                )

    result = asyncio.run(main())
    assert not result.is_error, _text(result)
    lines = errlog.read_text().splitlines()
    assert lines[0].startswith("paravt serve-tools: serving crop_video and video_info on stdio")
    assert str(root) in lines[0]
    assert "Traceback" not in errlog.read_text()
    assert all(ln.startswith("paravt: warning:") for ln in lines[1:] if ln.strip()), lines
