"""Test videos made at test time, so the suite stands on its own without ``../shared``.

Why: the real files in ``../shared/videos`` are not part of a clone. Every property a test reads
from one of them (size, frame rate, codec, colour range, a broken NAL unit, variable frame rate)
is reproduced here with ffmpeg and PyAV, small enough to build in a few seconds. ``STAND_INS``
maps each real file's name to the generator of a file with those properties, so tests keep
naming the real file and run on the stand-in when the real one is absent. The extra kinds
(rotation metadata, no duration, several streams) have no real counterpart.

A plain module (tests/ has no packages); ``tests/conftest.py`` builds the files once per session.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

#: The real test videos: ``shared/videos`` beside the checkout (absent from a plain clone).
SHARED_VIDEOS = Path(__file__).resolve().parents[1].parent / "shared" / "videos"


class MissingEncoder(RuntimeError):
    """This machine's ffmpeg cannot write the codec a stand-in needs."""


def ffmpeg_exe() -> str:
    exe = shutil.which("ffmpeg")
    if exe is None:
        raise MissingEncoder("ffmpeg not installed (apt-get install ffmpeg)")
    return exe


def has_encoder(name: str) -> bool:
    out = subprocess.run(
        [ffmpeg_exe(), "-hide_banner", "-encoders"], capture_output=True, text=True, check=True
    ).stdout
    return any(line.split()[1:2] == [name] for line in out.splitlines() if line.strip())


def _run(*args: str) -> None:
    subprocess.run([ffmpeg_exe(), "-y", "-loglevel", "error", *args], check=True)


def _need(encoder: str) -> None:
    if not has_encoder(encoder):
        raise MissingEncoder(f"this ffmpeg has no {encoder} encoder")


def testsrc2_720p(out: Path) -> Path:
    """1280x720 @ 30, 2 s, x264 with one keyframe (60 frames): the frame-accuracy oracle."""
    _run(
        "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30:duration=2",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "300", str(out),
    )  # fmt: skip
    return out


def footage_mkv(out: Path) -> Path:
    """H.264 Main 426x240 @ 30 (a size no resize factor divides) + Opus audio in Matroska:
    310 frames, 10.33 s, a keyframe every 5 s, no B-frames (as the shared file: the tests that
    check a stream without them use this one). CRF 18: at x264's default 23 these synthetic frames
    put transformers' PIL processor 2 steps from its torchvision one on one Qwen2.5-VL value, where
    the real file (and CRF 18, 28 or preset medium here) stays within the 1 step the kernel parity
    test allows; the bound is a property of the content, not of the kernel."""
    _run(
        "-f", "lavfi", "-i", "testsrc2=size=426x240:rate=30:duration=10.3334",
        "-f", "lavfi", "-i", "sine=frequency=440:duration=10.3334",
        "-c:v", "libx264", "-profile:v", "main", "-preset", "veryfast", "-pix_fmt", "yuv420p",
        "-g", "150", "-bf", "0", "-crf", "18", "-frames:v", "310", "-c:a", "libopus", "-avoid_negative_ts", "disabled",
        str(out),
    )  # fmt: skip
    return out


def var_fps_mp4(out: Path) -> Path:
    """Variable frame rate, 128x128: 149 frames at 15 fps then 151 at 30 fps, 300 frames over
    14.97 s (average 20.04 fps against a nominal 30), keyframes at frames 0 and 250."""
    _run(
        "-f", "lavfi", "-i", "testsrc2=size=128x128:rate=30:duration=10",
        "-vf", "setpts='if(lt(N,149),2*N,149+N)/30/TB'", "-frames:v", "300",
        "-fps_mode", "vfr", "-video_track_timescale", "30", "-c:v", "libx264",
        "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "250", str(out),
    )  # fmt: skip
    return out


def hevc_mp4(out: Path) -> Path:
    """HEVC 128x128 @ 10, 10 frames: fewer frames than most overviews ask for."""
    _need("libx265")
    _run(
        "-f", "lavfi", "-i", "testsrc2=size=128x128:rate=10:duration=1",
        "-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
        "-x265-params", "log-level=error", "-tag:v", "hvc1", str(out),
    )  # fmt: skip
    return out


def vp9_webm(out: Path) -> Path:
    """VP9 320x180 @ 24 + Opus in WebM, 5 s, 120 frames."""
    _need("libvpx-vp9")
    _run(
        "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=24:duration=5",
        "-f", "lavfi", "-i", "sine=frequency=330:duration=5",
        "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-b:v", "200k",
        "-c:a", "libopus", "-avoid_negative_ts", "disabled", str(out),
    )  # fmt: skip
    return out


def full_range_mp4(out: Path) -> Path:
    """Full-range BT.709 (yuvj420p) 1280x720, 30 frames, x264 with B-frames."""
    _run(
        "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30:duration=1",
        "-vf", "scale=out_range=full:out_color_matrix=bt709",
        "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuvj420p",
        "-color_range", "pc", "-colorspace", "bt709", "-color_primaries", "bt709",
        "-color_trc", "bt709", str(out),
    )  # fmt: skip
    return out


def corrupted_mp4(out: Path) -> Path:
    """H.264 320x240 @ 10, 50 frames, one keyframe; frame 28's NAL length field is overwritten,
    so 49 of 50 frames decode."""
    import av  # heavy optional library

    clean = out.with_name(out.stem + ".clean.mp4")
    _run(
        "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=10:duration=5",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "250",
        str(clean),
    )  # fmt: skip
    with av.open(str(clean)) as box:
        packets = [(p.pos, p.size) for p in box.demux(video=0) if p.size]
    pos, _ = packets[28]  # ultrafast: no B-frames, decode order = display order
    data = bytearray(clean.read_bytes())
    data[pos : pos + 4] = b"\x7f\xff\xff\xf0"  # AVCC length prefix far beyond the packet
    out.write_bytes(bytes(data))
    clean.unlink()
    return out


def rotated_mp4(out: Path) -> Path:
    """160x90 @ 25, 2 s, with a 90-degree display-matrix rotation in the container."""
    plain = out.with_name(out.stem + ".plain.mp4")
    _run(
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=2",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", str(plain),
    )  # fmt: skip
    _run("-i", str(plain), "-c", "copy", "-metadata:s:v:0", "rotate=90", str(out))
    plain.unlink()
    return out


def no_duration_mkv(out: Path) -> Path:
    """Matroska written to a pipe (2 s @ 25): no duration and no cues in the header."""
    with out.open("wb") as sink:
        subprocess.run(
            [
                ffmpeg_exe(), "-loglevel", "error",
                "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=2",
                "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                "-f", "matroska", "pipe:1",
            ],
            stdout=sink,
            check=True,
        )  # fmt: skip
    return out


def multi_stream_mkv(out: Path) -> Path:
    """Audio first, then two video streams (160x90 and 96x54), 3 s: the best stream is not stream 0."""
    _run(
        "-f", "lavfi", "-i", "sine=frequency=220:duration=3",
        "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=3",
        "-f", "lavfi", "-i", "testsrc=size=96x54:rate=10:duration=3",
        "-map", "0:a", "-map", "1:v", "-map", "2:v",
        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "libopus",
        str(out),
    )  # fmt: skip
    return out


#: the hard kinds' stored size (4:3; small, since every kind is encoded at each session's start)
HARD_SIZE = (192, 144)
#: how a player shows the anamorphic kind (4:3 pixels): 256x144
ANAMORPHIC_SHOWN = (256, 144)
#: The hard kinds for frame equality (tests/video/test_frame_equality.py): 12 s of moving
#: testsrc2 at ``HARD_SIZE`` @ 25 with keyframes in the middle, each made so that a decode which
#: seeks to the wrong place, or trusts the wrong flag, returns other pictures than a straight
#: decode.
_HARD_SRC = (
    "-f",
    "lavfi",
    "-i",
    f"testsrc2=size={HARD_SIZE[0]}x{HARD_SIZE[1]}:rate=25:duration=12",
)


def _x264(out: Path, *extra: str, vf: str | None = None, pix_fmt: str = "yuv420p") -> Path:
    _need("libx264")
    _run(
        *_HARD_SRC, *(("-vf", vf) if vf else ()), "-pix_fmt", pix_fmt, "-c:v", "libx264",
        *extra, str(out),
    )  # fmt: skip
    return out


def open_gop_mp4(out: Path) -> Path:
    """x264 open GOPs (every keyframe after the first a non-IDR I picture with a recovery point
    SEI; B-frames before it in display order reference the previous GOP)."""
    return _x264(out, "-x264-params", "keyint=50:min-keyint=50:scenecut=0:open-gop=1:bframes=3")


def high444_mp4(out: Path) -> Path:
    """H.264 High 4:4:4, keyframes forced at 3.8 and 7.25 s, open GOP (the issue's file)."""
    return _x264(
        out, "-profile:v", "high444", "-force_key_frames", "3.8,7.25",
        "-x264-params", "open-gop=1:keyint=1000:scenecut=0", pix_fmt="yuv444p",
    )  # fmt: skip


def non_idr_i_mp4(out: Path) -> Path:
    """Non-IDR I pictures that FFmpeg flags as keyframes (a one-reference stream: its parser's
    guess) at white flashes at 3.8 and 7.24 s: not restart points by the bitstream."""
    return _x264(
        out, "-x264-params", "keyint=1000:min-keyint=1000:ref=1:bframes=0",
        vf="drawbox=c=white:t=fill:enable='eq(n,95)+eq(n,181)'",
    )  # fmt: skip


def intra_refresh_mp4(out: Path) -> Path:
    """x264 periodic intra refresh: no I picture after the first; every "keyframe" is a P
    picture whose recovery point SEI says the pictures come right some frames later."""
    return _x264(out, "-x264-params", "intra-refresh=1:keyint=97")


def anamorphic_mp4(out: Path) -> Path:
    """Non-square pixels: ``HARD_SIZE`` stored, sample aspect ratio 4:3 (``ANAMORPHIC_SHOWN``)."""
    return _x264(out, "-g", "50", vf="setsar=4/3")


def no_duration_gops_mkv(out: Path) -> Path:
    """Matroska written to a pipe (no duration, no cues) with a keyframe every 2 s: torchcodec
    takes no frame table for it, so its decoders are exact-mode ones."""
    _need("libx264")
    with out.open("wb") as sink:
        subprocess.run(
            [ffmpeg_exe(), "-loglevel", "error", *_HARD_SRC, "-c:v", "libx264",
             "-pix_fmt", "yuv420p", "-g", "50", "-f", "matroska", "pipe:1"],
            stdout=sink, check=True,
        )  # fmt: skip
    return out


def no_duration_intra_refresh_mkv(out: Path) -> Path:
    """Both at once: no duration in the header and keyframe flags that are not restart points
    (decoded packet by packet from restart points: ``paravt.video.sequential``)."""
    _need("libx264")
    with out.open("wb") as sink:
        subprocess.run(
            [ffmpeg_exe(), "-loglevel", "error", *_HARD_SRC, "-c:v", "libx264",
             "-pix_fmt", "yuv420p", "-x264-params", "intra-refresh=1:keyint=97",
             "-f", "matroska", "pipe:1"],
            stdout=sink, check=True,
        )  # fmt: skip
    return out


def hevc_open_gop_mp4(out: Path) -> Path:
    """x265 open GOPs: CRA keyframes whose leading pictures reference the previous GOP."""
    _need("libx265")
    _run(
        *_HARD_SRC, "-pix_fmt", "yuv420p", "-c:v", "libx265",
        "-x265-params", "keyint=50:min-keyint=50:scenecut=0:open-gop=1:log-level=error",
        str(out),
    )  # fmt: skip
    return out


#: The x264 build an edited file claims (``old_x264_build``): FFmpeg's H.264 decoder applies
#: its work-arounds for x264 builds before 151 (4:4:4 among them) to every picture decoded after
#: the SEI that names the build, for as long as the decoder lives.
OLD_X264_BUILD = b"142"


def old_x264_build(path: Path) -> Path:
    """Rewrite, in place, the build number in the x264 version SEI of ``path``'s first packet
    (``x264 - core NNN``) to ``OLD_X264_BUILD``, same length, so the file says an old x264 wrote
    it. A decoder that saw the first packet decodes every picture with the old build's
    work-arounds; one whose first packet is a later IDR decodes without them, other pixels."""
    data = bytearray(path.read_bytes())
    found = list(re.finditer(rb"x264 - core (\d{3}) ", data))
    if len(found) != 1:
        raise RuntimeError(f"{path}: expected one x264 version SEI, found {len(found)}")
    data[found[0].start(1) : found[0].end(1)] = OLD_X264_BUILD
    path.write_bytes(bytes(data))
    return path


def old_x264_444_mp4(out: Path) -> Path:
    """H.264 High 4:4:4 without B-frames, IDRs at 3.8 and 7.25 s, claiming x264 core 142:
    decoded through torchcodec decoders (nothing disposable to skip)."""
    _x264(
        out, "-profile:v", "high444", "-force_key_frames", "3.8,7.25",
        "-x264-params", "keyint=1000:scenecut=0:bframes=0", pix_fmt="yuv444p",
    )  # fmt: skip
    return old_x264_build(out)


def old_x264_444_bframes_mp4(out: Path) -> Path:
    """The same with B-frames (IDRs every 3.2 s): decoded from filtered packets
    (``paravt.video.disposable``), each stream starting at a later IDR."""
    _x264(
        out, "-profile:v", "high444",
        "-x264-params", "keyint=80:min-keyint=80:scenecut=0:bframes=3", pix_fmt="yuv444p",
    )  # fmt: skip
    return old_x264_build(out)


def _avcc_parameter_sets(extradata: bytes) -> tuple[list[bytes], list[bytes]]:
    """The SPS and PPS NAL units of an ``avcC`` record."""
    at, found = 6, []
    for count_at_start in (True, False):
        count = extradata[5] & 31 if count_at_start else extradata[at - 1]
        units = []
        for _ in range(count):
            size = int.from_bytes(extradata[at : at + 2], "big")
            units.append(extradata[at + 2 : at + 2 + size])
            at += 2 + size
        found.append(units)
        at += 1
    return found[0], found[1]


def inband_pps_mp4(out: Path, bframes: int = 0) -> Path:
    """H.264 whose first packet carries its own SPS and PPS in band (CAVLC), while the MP4's
    ``avcC`` record holds another PPS of the same id (CABAC), as a file spliced from two encodes
    can. A decoder that saw the first packet decodes every later picture with the in-band PPS
    (parameter sets outlive a flush); one that starts at a later IDR uses the record's and
    returns garbage or fails. IDRs every 3.2 s."""
    import av  # PyAV: a test dependency

    _need("libx264")
    made = {}
    for cabac in (0, 1):
        made[cabac] = out.with_name(f"{out.stem}.cabac{cabac}.mp4")
        _run(
            *_HARD_SRC, "-pix_fmt", "yuv420p", "-c:v", "libx264", "-x264-params",
            f"cabac={cabac}:keyint=80:min-keyint=80:scenecut=0:bframes={bframes}",
            str(made[cabac]),
        )  # fmt: skip
    with av.open(str(made[1])) as other:
        _, wrong_pps = _avcc_parameter_sets(bytes(other.streams.video[0].codec_context.extradata))
    with av.open(str(made[0])) as inp, av.open(str(out), "w") as box:
        stream = inp.streams.video[0]
        record = bytes(stream.codec_context.extradata)
        sps, pps = _avcc_parameter_sets(record)
        ost = box.add_stream_from_template(stream)
        ost.codec_context.extradata = (
            record[:5] + bytes([0xE1]) + len(sps[0]).to_bytes(2, "big") + sps[0]
            + bytes([1]) + len(wrong_pps[0]).to_bytes(2, "big") + wrong_pps[0]
        )  # fmt: skip
        for n, pkt in enumerate(p for p in inp.demux(stream) if p.size):
            if n == 0:
                inband = b"".join(len(u).to_bytes(4, "big") + u for u in (sps[0], pps[0]))
                first = av.Packet(inband + bytes(pkt))
                first.pts, first.dts, first.time_base = pkt.pts, pkt.dts, pkt.time_base
                first.is_keyframe = True
                pkt = first
            pkt.stream = ost
            box.mux(pkt)
    for path in made.values():
        path.unlink()
    return out


#: files whose first packet changes how FFmpeg decodes every later picture (tests/video/
#: test_first_packet.py): name -> generator.
FIRST_PACKET_KINDS: dict[str, Callable[[Path], Path]] = {
    "inband_pps.mp4": inband_pps_mp4,
    "inband_pps_bframes.mp4": lambda out: inband_pps_mp4(out, bframes=3),
}

#: files that say an old x264 wrote them (``old_x264_build``): FFmpeg decodes them with that
#: build's work-arounds, which this FFmpeg (5.1) cannot apply to today's x264 output without
#: decoding errors, so their straight decode itself is damaged (tests/video/test_first_packet.py).
OLD_X264_KINDS: dict[str, Callable[[Path], Path]] = {
    "old_x264_444.mp4": old_x264_444_mp4,
    "old_x264_444_bframes.mp4": old_x264_444_bframes_mp4,
}


#: name -> generator of the hard kinds (each ~0.3 s to make).
HARD_KINDS: dict[str, Callable[[Path], Path]] = {
    "open_gop.mp4": open_gop_mp4,
    "high444_open_gop.mp4": high444_mp4,
    "non_idr_i.mp4": non_idr_i_mp4,
    "intra_refresh.mp4": intra_refresh_mp4,
    "anamorphic.mp4": anamorphic_mp4,
    "no_duration_gops.mkv": no_duration_gops_mkv,
    "no_duration_intra_refresh.mkv": no_duration_intra_refresh_mkv,
    "hevc_open_gop.mp4": hevc_open_gop_mp4,
}


#: real file name in ../shared/videos -> generator of a file with the properties tests read.
STAND_INS: dict[str, Callable[[Path], Path]] = {
    "torchcodec__testsrc2.mp4": testsrc2_720p,
    "decord__flipping_a_pancake.mkv": footage_mkv,
    "torchcodec__var_fps_video.mp4": var_fps_mp4,
    "torchcodec__h265_video.mp4": hevc_mp4,
    "mediabunny__trim-buck-bunny.webm": vp9_webm,
    "torchcodec__bt709_full_range.mp4": full_range_mp4,
    "decord__corrupted.mp4": corrupted_mp4,
}

#: kinds with no real counterpart: name -> generator.
EXTRA_KINDS: dict[str, Callable[[Path], Path]] = {
    "rotated.mp4": rotated_mp4,
    "no_duration.mkv": no_duration_mkv,
    "multi_stream.mkv": multi_stream_mkv,
}


class StandIns:
    """The stand-ins of one test session, each made on first use (a test that needs one file
    does not pay for seven); ``missing`` says why a file could not be made."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.missing: dict[str, str] = {}

    def path(self, name: str) -> Path | None:
        """The stand-in for the real file ``name``, or None (the reason is in ``missing``)."""
        if name not in STAND_INS:
            self.missing[name] = "no stand-in is defined for it in tests/media.py"
        else:
            self.missing.update(build(self.folder, {name: STAND_INS[name]}))
        return None if name in self.missing else self.folder / name

    def build_all(self) -> Path:
        """All stand-ins, for tests that take a whole folder of videos (e.g. a video root)."""
        for name in STAND_INS:
            self.path(name)
        return self.folder


def build(folder: Path, generators: dict[str, Callable[[Path], Path]]) -> dict[str, str]:
    """Write each file into ``folder``; returns name -> why it is missing, for those that are."""
    missing = {}
    for name, make in generators.items():
        target = folder / name
        if target.exists():
            continue
        try:
            make(target)
        except MissingEncoder as e:
            missing[name] = str(e)
    return missing
