"""Shared fixtures: tiny real models, test videos, and generated long videos.

Everything is built once per test session and offline: tiny random Qwen-VL models with
``paravt.models.tiny``, videos with Debian's ffmpeg. The real files of ``../shared/videos`` are
used when they are there; without them every test runs on generated stand-ins with the same
properties (``tests/media.py``), so a clone of the repo tests itself. ``--without-shared`` acts
as if ``../shared`` were missing; with ``CI=true`` a missing ``../shared`` fails the run.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import media
import pytest

# Small models on 2 cores are ~50x slower with torch's default thread count.
os.environ.setdefault("OMP_NUM_THREADS", "1")

SHARED_VIDEOS = media.SHARED_VIDEOS
#: the vLLM probe's one-line report, kept for the terminal summary
VLLM_PROBE = pytest.StashKey[str]()


def pytest_addoption(parser):
    parser.addoption(
        "--without-shared",
        action="store_true",
        help="act as if ../shared were missing: videos are generated stand-ins (tests/media.py)",
    )
    parser.addoption(
        "--vllm-wheels",
        default=None,
        help="a folder of downloaded vLLM wheels whose source tests/train/test_vllm_api.py reads",
    )


def shared_missing(config) -> bool:
    return config.getoption("--without-shared") or not SHARED_VIDEOS.is_dir()


def pytest_configure(config):
    """In CI the real videos are part of the contract: their absence is an error, not a skip."""
    if os.environ.get("CI") == "true" and not SHARED_VIDEOS.is_dir():
        raise pytest.UsageError(
            f"CI=true but the real test files are missing: {SHARED_VIDEOS} does not exist. "
            "Check out the shared/ folder beside the repo (CI's checkout step), or unset CI to "
            "run on generated stand-ins only."
        )


def pytest_terminal_summary(terminalreporter, config):
    """The vLLM probe's line (CPU, SIMD level, the ops vLLM loaded or why it cannot run), when
    ``vllm`` tests were collected: a failure on a new machine is read off the log."""
    line = config.stash.get(VLLM_PROBE, None)
    if line is not None:
        terminalreporter.write_line(f"vLLM probe: {line}")
    if "vllm" in sys.modules:  # a colocated engine ran in this process: which ops it had
        ops = ", ".join(vllm_probe().mapped_vllm_ops()) or "none"
        terminalreporter.write_line(f"vLLM ops mapped in the test process: {ops}")


def vllm_probe():
    """scripts/vllm_probe.py as a module: loads vLLM in a child and says what it mapped."""
    from repo_files import load_repo_file

    return load_repo_file("scripts/vllm_probe.py", "vllm_probe")


def pytest_report_header(config):
    if shared_missing(config):
        return "test videos: generated stand-ins (tests/media.py); ../shared/videos not used"
    return f"test videos: {SHARED_VIDEOS}"


@pytest.hookimpl(tryfirst=True)  # before xdist's worker reads the groups (it runs untagged)
def pytest_collection_modifyitems(config, items):
    """Group the tests by file for ``--dist loadgroup`` (a file's fixtures are then built
    once, on one worker), except in files marked ``spread``: their tests are long, set up their
    own inputs, and go to whichever worker is free. Why not ``--dist loadfile``: the docs-command
    file alone was a third of the suite, and held one worker while the other ran out of work."""
    for item in items:
        if item.get_closest_marker("spread") is None:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    _skip_what_cannot_run(config, items)


def _skip_what_cannot_run(config, items) -> None:
    """Skip ``gpu`` tests cleanly when no CUDA device is present, and ``vllm`` tests when vLLM is
    not installed (it lives in an environment of its own: scripts/vllm-env.sh)."""
    vllm_items = [item for item in items if item.get_closest_marker("vllm") is not None]
    vllm_reason = None
    if vllm_items and importlib.util.find_spec("vllm") is None:
        vllm_reason = (
            "needs vLLM: build its environment with scripts/vllm-env.sh VENV and run "
            "VENV/bin/python -m pytest -m vllm"
        )
    elif vllm_items:
        # vLLM is installed: load it the way a run would, in a child (a build this CPU cannot
        # run kills the child, not pytest); where it cannot run, its tests skip with the reason
        seen = vllm_probe().probe()
        config.stash[VLLM_PROBE] = seen.line()
        if not seen.ok:
            vllm_reason = f"vLLM cannot run on this machine: {seen.reason}"
    if vllm_reason is not None:
        for item in vllm_items:
            item.add_marker(pytest.mark.skip(reason=vllm_reason))
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:  # nothing to decide: torch need not be imported for it
        return
    try:
        import torch

        has_cuda = torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is a dependency
        has_cuda = False
    if has_cuda:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device (gpu marker)")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def stand_ins(tmp_path_factory) -> media.StandIns:
    """Generated stand-ins for the real test videos, under the real names, made on first use."""
    return media.StandIns(tmp_path_factory.mktemp("stand_in_videos"))


@pytest.fixture(scope="session")
def shared_videos(request) -> Path:
    """The folder of test videos: ``../shared/videos``, or the generated stand-ins under the
    same names when ``../shared`` is missing (or ``--without-shared``)."""
    if shared_missing(request.config):
        return request.getfixturevalue("stand_ins").build_all()
    return SHARED_VIDEOS


@pytest.fixture(scope="session")
def video_path(request):
    """``video_path("torchcodec__testsrc2.mp4")`` → absolute path of that test video (the real
    file, or its generated stand-in, made on first use)."""

    def _get(name: str) -> Path:
        if shared_missing(request.config):
            stand_ins = request.getfixturevalue("stand_ins")
            p = stand_ins.path(name)
            if p is None:
                pytest.skip(f"no stand-in for {name}: {stand_ins.missing[name]}")
            return p
        p = SHARED_VIDEOS / name
        if not p.is_file():
            pytest.skip(f"test video {name} missing from {SHARED_VIDEOS}")
        return p

    return _get


@pytest.fixture(scope="session")
def extra_videos(tmp_path_factory) -> dict[str, Path]:
    """Generated kinds with no real counterpart: ``rotated.mp4`` (display matrix 90 degrees),
    ``no_duration.mkv`` (no duration or cues in the header), ``multi_stream.mkv`` (audio, then
    two video streams)."""
    folder = tmp_path_factory.mktemp("extra_videos")
    media.build(folder, media.EXTRA_KINDS)
    return {name: folder / name for name in media.EXTRA_KINDS}


def _ffmpeg() -> str:
    try:
        return media.ffmpeg_exe()
    except media.MissingEncoder as e:
        pytest.skip(str(e))


def generate_video(
    path: Path,
    seconds: float,
    size: str = "320x180",
    fps: int = 30,
    gop: int | None = None,
    faststart: bool = False,
    preset: str = "ultrafast",
    x264_params: str | None = None,
) -> Path:
    """Encode an ffmpeg testsrc2 clip (burnt-in clock) with x264; ``gop=None`` keeps x264's
    default keyframe interval, ``faststart`` puts the MP4 index at the front. ``ultrafast`` has
    no B-frames; ``veryfast`` has x264's default 3 B-frames with a pyramid (disposable pictures)."""
    cmd = [
        _ffmpeg(),
        "-y",
        "-loglevel",
        "error",
        "-f",
        "lavfi",
        "-i",
        f"testsrc2=size={size}:rate={fps}:duration={seconds}",
        "-c:v",
        "libx264",
        "-preset",
        preset,
        "-pix_fmt",
        "yuv420p",
    ]
    if x264_params:
        cmd += ["-x264-params", x264_params]
    if gop is not None:
        cmd += ["-g", str(gop)]
    if faststart:
        cmd += ["-movflags", "+faststart"]
    subprocess.run(cmd + [str(path)], check=True)
    return path


@pytest.fixture(scope="session")
def long_video(tmp_path_factory) -> Path:
    """A 3-minute 320x180 @30 fps H.264 video (x264 default keyframe interval), built once."""
    out = tmp_path_factory.mktemp("videos") / "long_3min.mp4"
    return generate_video(out, seconds=180)


def _tiny(tmp_path_factory, arch: str) -> Path:
    from paravt.models.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp(f"tiny-{arch}"), arch=arch)


@pytest.fixture(scope="session")
def tiny_qwen3_dir(tmp_path_factory) -> Path:
    """A tiny random Qwen3-VL model folder (model + processor + chat template)."""
    return _tiny(tmp_path_factory, "qwen3-vl")


@pytest.fixture(scope="session")
def vllm_tiny_server(tiny_qwen3_dir, tmp_path_factory):
    """A real vLLM server of ``tiny_qwen3_dir`` on a free loopback port (CPU, float32), started
    once per session for the ``vllm`` tests and shut down at the end. It serves what TRL's
    client calls too (``ServeSettings.trl``), so the eval and the training tests share it."""
    from paravt.eval.agreement import ServeSettings, VLLMServe

    settings = ServeSettings(server="vllm", threads=1, startup_timeout_s=900, trl=True)
    log = tmp_path_factory.mktemp("vllm-tiny") / "serve.log"
    with VLLMServe(str(tiny_qwen3_dir), settings, str(log)) as server:
        yield server
    assert server.proc.poll() is not None  # shut down


@pytest.fixture(scope="session")
def tiny_qwen25_dir(tmp_path_factory) -> Path:
    """A tiny random Qwen2.5-VL model folder (model + processor + chat template)."""
    return _tiny(tmp_path_factory, "qwen2.5-vl")


# -- small generated videos and unusable inputs (video and tools rooms) -------------------------
@pytest.fixture(scope="session")
def media_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="session")
def gop_video(media_dir) -> Path:
    """12 s, 160x90 @ 30 fps, a keyframe every second (gop 30)."""
    return generate_video(media_dir / "gop30_12s.mp4", 12, "160x90", 30, gop=30)


@pytest.fixture(scope="session")
def minutes_video(media_dir) -> Path:
    """2 minutes, 96x54 @ 10 fps, x264's default keyframe interval: for MM:SS windows."""
    return generate_video(media_dir / "two_minutes.mp4", 120, "96x54", 10)


@pytest.fixture(scope="session")
def bframes_video(media_dir) -> Path:
    """20 s, 192x108 @ 30 fps, x264 veryfast: B-frames with a pyramid, a keyframe every 3 s."""
    return generate_video(
        media_dir / "bframes_20s.mp4", 20, "192x108", 30, gop=90, preset="veryfast"
    )


@pytest.fixture(scope="session")
def odd_size_video(media_dir) -> Path:
    """8 s, 330x186 @ 30 fps, x264 veryfast (B-frames, a keyframe every 2 s): a size no resize
    rule keeps (neither side a multiple of 28 or 32), for frames resized as they are decoded."""
    return generate_video(
        media_dir / "odd_size_8s.mp4", 8, "330x186", 30, gop=60, preset="veryfast"
    )


@pytest.fixture(scope="session")
def open_gop_video(media_dir) -> Path:
    """Like ``bframes_video`` but with open GOPs (B-frames before a keyframe refer across it)."""
    return generate_video(
        media_dir / "open_gop_20s.mp4",
        20,
        "192x108",
        30,
        gop=90,
        preset="veryfast",
        x264_params="open-gop=1",
    )


@pytest.fixture(scope="session")
def faststart_video(media_dir) -> Path:
    """6 s, 160x90 @ 25 fps with the MP4 index at the front (so a truncated copy still opens)."""
    return generate_video(media_dir / "faststart_6s.mp4", 6, "160x90", 25, gop=25, faststart=True)


@pytest.fixture(scope="session")
def bad_files(media_dir, gop_video, faststart_video) -> dict[str, Path]:
    """Inputs that are not usable videos, each made for real."""
    out = {"missing": media_dir / "does_not_exist.mp4", "directory": media_dir}
    empty = media_dir / "empty.mp4"
    empty.write_bytes(b"")
    out["empty"] = empty
    text = media_dir / "notes.mp4"
    text.write_text("this is a text file, not a video\n" * 20)
    out["text"] = text
    data = gop_video.read_bytes()
    trunc = media_dir / "truncated.mp4"  # moov atom is at the end: gone after truncation
    trunc.write_bytes(data[: len(data) // 2])
    out["truncated"] = trunc
    fdata = faststart_video.read_bytes()
    ftrunc = media_dir / "truncated_faststart.mp4"  # index survives, media data is cut
    ftrunc.write_bytes(fdata[: int(len(fdata) * 0.6)])
    out["truncated_faststart"] = ftrunc
    audio = media_dir / "tone.wav"
    subprocess.run(
        [_ffmpeg(), "-y", "-loglevel", "error", "-f", "lavfi", "-i", "sine=duration=1", str(audio)],
        check=True,
    )
    out["audio_only"] = audio
    return out


# -- tiny models around the real Qwen tokenizers and chat templates (../shared/qwen) ------------
SHARED_QWEN = Path(__file__).resolve().parents[1].parent / "shared" / "qwen"

#: name -> (arch, tokenizer folder, template file or None). The Thinking folder holds only a chat
#: template; it is paired with the Instruct folder's tokenizer (same vocabulary, its README says).
REAL_TEMPLATES = {
    "qwen2.5-vl-instruct": ("qwen2.5-vl", "Qwen2.5-VL-7B-Instruct", None),
    "qwen3-vl-instruct": ("qwen3-vl", "Qwen3-VL-8B-Instruct", None),
    "qwen3-vl-thinking": (
        "qwen3-vl",
        "Qwen3-VL-8B-Instruct",
        "Qwen3-VL-8B-Thinking/chat_template.jinja",
    ),
}


@pytest.fixture(scope="session")
def shared_qwen() -> Path:
    """../shared/qwen (the real Qwen tokenizer and template folders); skips when absent."""
    if not SHARED_QWEN.is_dir():
        pytest.skip(f"real Qwen tokenizers not found at {SHARED_QWEN} (../shared beside the repo)")
    return SHARED_QWEN


@pytest.fixture(scope="session")
def real_templates() -> dict:
    """``REAL_TEMPLATES`` (name -> arch, tokenizer folder, template file or None) for tests."""
    return REAL_TEMPLATES


@pytest.fixture(scope="session")
def real_tiny_dir(tmp_path_factory, shared_qwen):
    """``real_tiny_dir("qwen3-vl-thinking")`` → a tiny random model folder around that real
    tokenizer and template, built once per session; skips when ../shared/qwen is absent."""
    built: dict[str, Path] = {}

    def _get(name: str) -> Path:
        if name not in built:
            from paravt.models.tiny import make_tiny_model

            arch, tok, template = REAL_TEMPLATES[name]
            built[name] = make_tiny_model(
                tmp_path_factory.mktemp(f"real-{name}"),
                arch=arch,
                from_tokenizer=shared_qwen / tok,
                chat_template=shared_qwen / template if template else None,
            )
        return built[name]

    return _get


@dataclass
class CliResult:
    """What a shell sees of one `paravt` run: the exit code and the two streams."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def paravt_cli(capsys):
    """Runs `paravt ARGS` in this process through the console script's `main(argv)`.

    The exit-code and one-line-error contract is the same as a subprocess's, without paying
    ~3 s of torch/transformers imports per call; `tests/cli/test_cli_basics.py` keeps one real
    `python -m paravt.cli.main` run for the entry point itself.
    """
    from paravt.cli.main import main

    def run(*args) -> CliResult:
        capsys.readouterr()  # drop what the test printed before
        code = main([str(a) for a in args])
        out = capsys.readouterr()
        return CliResult(code, out.out, out.err)

    return run
