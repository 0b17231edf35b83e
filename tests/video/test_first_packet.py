"""Every decoder knows what the file's first packet told it, and damage is said.

What a decoder saw before a seek can change what the seek decodes: FFmpeg keeps the parameter
sets of the packets it decoded (and, for H.264, the x264 build named by the first packet's SEI)
for as long as the decoder lives. ``media.FIRST_PACKET_KINDS`` writes files whose first packet
carries an in-band PPS that differs from the one in the MP4's ``avcC`` record: a decoder whose
first packet is a later IDR decodes with the record's and returns garbage (112/255 off) or
fails; one that saw the first packet decodes exactly. One is decoded through torchcodec
decoders, one (B-frames) through filtered packets (``paravt.video.disposable``).

The reference here is a straight decode by torchcodec's own FFmpeg: every packet in order from
the first, on one packet decoder, converted to RGB by torchcodec's converter. Same library,
same conversion: equal means equal, pixel for pixel (PyAV carries another FFmpeg release, whose
conversion rounds differently: tests/video/test_frame_equality.py holds paravt to it within a
tolerance). The real videos (and their stand-ins) are held to the same, with windows placed
after their later restart points.

``media.OLD_X264_KINDS`` are the issue's kind (High 4:4:4 claiming x264 core 142); with this
FFmpeg (5.1) their straight decode is itself damaged: the old build's work-arounds misparse
today's x264 output ("gray chroma", "error while decoding MB") and conceal the rest from
whatever picture came before, so no decode that starts at a restart point can equal it. paravt
must hand out the straight decode's frames there, and say they are damaged.
"""

from __future__ import annotations

import media
import pytest
import torch

from paravt.tools import CropConfig, WindowRequest, execute_windows
from paravt.video import VideoSource

#: real videos held to pixel equality: all but the damaged one (whose frames after the broken
#: packet are reported damaged, tests/video/test_frame_equality.py)
REAL = [name for name in media.STAND_INS if name != "decord__corrupted.mp4"]


@pytest.fixture(scope="module")
def first_packet_videos(tmp_path_factory) -> tuple[dict, dict]:
    folder = tmp_path_factory.mktemp("first_packet")
    missing = media.build(folder, media.FIRST_PACKET_KINDS)
    return {name: folder / name for name in media.FIRST_PACKET_KINDS}, missing


@pytest.fixture(scope="module")
def old_x264_videos(tmp_path_factory) -> tuple[dict, dict]:
    folder = tmp_path_factory.mktemp("old_x264")
    missing = media.build(folder, media.OLD_X264_KINDS)
    return {name: folder / name for name in media.OLD_X264_KINDS}, missing


def straight_decode(path) -> dict[float, torch.Tensor]:
    """pts (seconds, rounded to the microsecond) -> RGB frame, decoding every packet of the video
    stream in order from the first with torchcodec's packet decoder and colour converter."""
    from torchcodec.decoders._blocks import ColorConverter, Demuxer

    demuxer = Demuxer(str(path), streams="video")
    decoder = demuxer.streams[0].make_decoder("cpu", num_ffmpeg_threads=1)
    converter = ColorConverter("cpu")
    frames: dict[float, torch.Tensor] = {}

    def keep(decoded) -> None:
        for raw in decoded:
            frames[round(float(raw.pts_seconds), 6)] = converter.convert(raw).data.clone()

    for packet in demuxer:
        try:
            keep(decoder.decode(packet))
        except RuntimeError:  # a packet the codec rejects: a player skips it and goes on
            continue
    keep(decoder.drain())
    return frames


def windows_after_restarts(src: VideoSource) -> list[dict]:
    """Three crop_video windows, each starting just after a restart point other than the first
    (as many as the file has), the rest filling the video's last two thirds."""
    table, begin, duration = src.table, src.meta.begin, src.meta.duration
    later = [table.pts[i] - begin for i in table.keyframes if table.pts[i] - begin > 0.5]
    later = [t for t in later if t < duration - 0.3][:3]
    windows = [{"start_time": t + 0.05, "end_time": min(duration, t + 2.0)} for t in later]
    fill = [
        (duration / 3, 2 * duration / 3),
        (2 * duration / 3, duration),
        (duration / 2, duration),
    ]
    for a, b in fill[: 3 - len(windows)]:
        windows.append({"start_time": a, "end_time": b})
    return windows


def differences(label: str, times, parts, begin: float, reference: dict) -> list[str]:
    bad = []
    for t, frame in zip(times, parts, strict=True):
        want = reference.get(round(t + begin, 6))
        if want is None:
            bad.append(f"{label} {t:.3f}s: no frame at this time in a straight decode")
        elif not torch.equal(frame, want):
            diff = (frame.to(torch.int16) - want.to(torch.int16)).abs().float()
            bad.append(f"{label} {t:.3f}s: max {int(diff.max())}, mean {float(diff.mean()):.2f}")
    return bad


def check_pixel_equal(path, *, damaged: bool = False) -> None:
    """The overview at 1 and 2 workers and three windows after later restart points (one batch,
    at 1 and 2 workers), each on a freshly opened source, equal a straight decode exactly.

    A clean file (``damaged`` off) is decoded once, from restart points: no frame is marked
    damaged and nothing is decoded again from the file's start. A file whose straight decode
    logs errors (``damaged``) hands out the straight decode's frames, each call with frames
    marked damaged and a warning that quotes FFmpeg."""
    reference = straight_decode(path)
    bad: list[str] = []
    for workers in (1, 2):
        src = VideoSource(path)
        frames = src.overview(64, workers=workers)
        assert not frames.failed, frames.warnings
        assert bool(frames.damaged) == damaged, frames.warnings
        assert not damaged or any("(FFmpeg: " in w for w in frames.warnings), frames.warnings
        bad += differences(f"overview w{workers}", frames.times, frames.parts, src.meta.begin,
                           reference)  # fmt: skip
        assert damaged == bool(getattr(src.decoders, "straight_decodes", 0))
        src = VideoSource(path)
        requests = [WindowRequest(src.path, w) for w in windows_after_restarts(src)]
        batch = execute_windows(requests, CropConfig(workers=workers), sources={src.path: src})
        for n, result in enumerate(batch.results):
            assert result.ok and bool(result.damaged) == damaged, result.warnings
            assert not damaged or "damaged part of the file" in result.message()
            parts = [result.clip.frame(i) for i in range(len(result.times))]
            bad += differences(f"window {n} w{workers}", result.times, parts, src.meta.begin,
                               reference)  # fmt: skip
        assert damaged == bool(getattr(src.decoders, "straight_decodes", 0))
    assert not bad, f"{path.name}: {len(bad)} frames differ from a straight decode:\n" + "\n".join(
        bad[:12]
    )


@pytest.mark.parametrize("name", list(media.FIRST_PACKET_KINDS))
def test_first_packet_kinds_equal_a_straight_decode(first_packet_videos, name):
    videos, missing = first_packet_videos
    if name in missing:
        pytest.skip(missing[name])
    check_pixel_equal(videos[name])


@pytest.mark.parametrize("name", list(media.OLD_X264_KINDS))
def test_old_x264_files_hand_out_the_straight_decode_and_say_damage(old_x264_videos, name):
    """This FFmpeg's straight decode of a file claiming x264 core 142 logs errors and conceals
    from whatever came before, so no decode from a restart point equals it: the frames handed
    out are the straight decode's, and they say they are damaged (never garbage marked ok)."""
    videos, missing = old_x264_videos
    if name in missing:
        pytest.skip(missing[name])
    check_pixel_equal(videos[name], damaged=True)


@pytest.mark.parametrize("name", REAL)
def test_real_videos_equal_a_straight_decode_exactly(video_path, name):
    src = VideoSource(video_path(name))
    if src.meta.rotation:
        pytest.skip("the packet decoder's frames are stored, not shown, upright")
    check_pixel_equal(video_path(name))


def test_the_first_packet_changes_what_a_seek_decodes(first_packet_videos):
    """What makes the files hard: a torchcodec decoder that seeks straight to the frame after the
    last IDR returns other pixels than a straight decode; the same decoder, once it has decoded
    the first frame, returns the straight decode's."""
    from torchcodec.decoders import VideoDecoder

    videos, missing = first_packet_videos
    for name, path in videos.items():
        if name in missing:
            continue
        reference = straight_decode(path)
        last_idr = VideoSource(path).table.keyframes[-1]
        want = reference[sorted(reference)[last_idr + 1]]
        decoder = VideoDecoder(str(path), seek_mode="exact")
        try:
            cold = decoder.get_frame_at(last_idr + 1).data
            assert (cold.float() - want.float()).abs().mean() > 10, name
        except RuntimeError as e:  # or the decoder refuses the IDR's slices
            assert "Invalid data" in str(e), name
        decoder = VideoDecoder(str(path), seek_mode="exact")
        decoder.get_frame_at(0)
        assert torch.equal(decoder.get_frame_at(last_idr + 1).data, want), name


def test_the_packet_by_packet_decode_sees_the_first_packet(first_packet_videos):
    """The decode of files torchcodec takes no frame table for (``video.sequential``, reached
    through ``VideoSource`` only for piped Matroska with demoted keyframes) primes its packet
    decoder too: called on an in-band-PPS file, frames after later IDRs equal a straight decode."""
    from paravt.video.sequential import decode_from_restart_points

    videos, missing = first_packet_videos
    for name, path in videos.items():
        if name in missing:
            continue
        reference = straight_decode(path)
        table = VideoSource(path).table
        wanted = [i + 3 for i in table.keyframes[1:]]
        out = decode_from_restart_points(str(path), table, wanted)
        assert sorted(out.frames) == wanted and not out.failed and not out.logged, name
        for i in wanted:
            frame, pts = out.frames[i]
            assert torch.equal(frame, reference[round(pts, 6)]), f"{name} frame {i}"
