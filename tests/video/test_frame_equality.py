"""What the model sees is what the file holds: every frame paravt hands out equals the frame a
straight decode from the file's first packet shows at the same time.

The reference is PyAV (its own FFmpeg build, nothing shared with torchcodec's decoding path)
decoding every packet in order from the start, so no seek, keyframe flag or frame table is
involved. paravt's frames are taken the ways the engine and the tool take them: the overview at
1 and 2 workers, and a batch of crop_video windows at 1 and 2 workers (the tool's path: lanes,
pooled decoders, the filtered-packet decode). Each frame must come back at its planned time and
match the reference within ``TOLERANCE``: the two libraries' RGB conversions differ by rounding
(measured on these files: at most 3 steps of 255 and a mean under 0.5), while a frame decoded
from the wrong references differs by tens to hundreds of steps over whole blocks.

The videos: every real test video (or its stand-in) and the hard kinds of ``tests/media.py``:
open GOP, High 4:4:4 with forced open-GOP keyframes, non-IDR I pictures flagged as keyframes,
intra refresh, no container duration (with and without demoted keyframes), variable frame rate,
rotation, non-square pixels, HEVC open GOP.
"""

from __future__ import annotations

import media
import pytest
import torch

from paravt.tools import CropConfig, WindowRequest, execute_windows
from paravt.video import VideoSource

av = pytest.importorskip("av")

#: The largest per-pixel difference and the largest mean difference (uint8 steps) between
#: paravt's frame and the reference at one time.
TOLERANCE = (8, 1.0)

#: every real kind, the damaged file included
REAL = list(media.STAND_INS)
EXTRA = ["rotated.mp4", "no_duration.mkv", "multi_stream.mkv"]


@pytest.fixture(scope="module")
def hard_videos(tmp_path_factory) -> tuple[dict, dict]:
    folder = tmp_path_factory.mktemp("hard_videos")
    missing = media.build(folder, media.HARD_KINDS)
    return {name: folder / name for name in media.HARD_KINDS}, missing


def straight_decode(path, rotation: float | None) -> dict[float, torch.Tensor]:
    """pts (seconds, rounded to the microsecond) -> RGB frame, decoding every packet of the
    best video stream in order from the first; a packet the decoder rejects is skipped."""
    frames = {}
    with av.open(str(path)) as box:
        videos = box.streams.video
        stream = videos[0] if len(videos) == 1 else box.streams.best("video")

        def keep(decoded):
            for frame in decoded:
                rgb = torch.from_numpy(frame.to_ndarray(format="rgb24")).permute(2, 0, 1)
                if rotation:  # torchcodec shows the frame upright; PyAV as stored
                    rgb = torch.rot90(rgb, k=round(rotation / 90), dims=(1, 2))
                frames[round(float(frame.pts * stream.time_base), 6)] = rgb

        for packet in box.demux(stream):
            try:
                keep(packet.decode())
            except av.error.FFmpegError:  # a corrupt packet: the frames after it still count
                continue
    return frames


def _compare(label: str, times, parts, begin: float, reference: dict, damaged) -> list[str]:
    """Lines for every frame that is not the reference's frame at its time, unless it is
    reported as decoded after damage in the file (``damaged``)."""
    bad = []
    for t, frame in zip(times, parts, strict=True):
        if t in damaged:
            continue
        want = reference.get(round(t + begin, 6))
        if want is None:
            bad.append(f"{label} {t:.3f}s: no frame at this time in a straight decode")
            continue
        diff = (frame.to(torch.int16) - want.to(torch.int16)).abs()
        worst, mean = int(diff.max()), float(diff.float().mean())
        if worst > TOLERANCE[0] or mean > TOLERANCE[1]:
            bad.append(f"{label} {t:.3f}s: max {worst}, mean {mean:.2f}")
    return bad


def windows_of(duration: float) -> list[dict]:
    """crop_video windows over the whole video and a short one inside its last second."""
    third = duration / 3
    return [
        {"start_time": 0.0, "end_time": third},
        {"start_time": third, "end_time": 2 * third},
        {"start_time": 2 * third, "end_time": duration},
        {"start_time": max(0.0, duration - 1.0), "end_time": duration},
    ]


def check_video(path, *, corrupt: bool = False) -> None:
    """The overview and a window batch, at 1 and 2 workers, equal a straight decode."""
    src = VideoSource(path)
    reference = straight_decode(path, src.meta.rotation)
    bad: list[str] = []
    for workers in (1, 2):
        frames = src.overview(64, workers=workers)
        # a clean file is decoded once, from restart points: nothing FFmpeg logs there sends it
        # to the straight decode from the file's start (video.ffmpeg_log.BENIGN)
        assert corrupt or not getattr(src.decoders, "straight_decodes", 0), frames.warnings
        assert corrupt or not frames.failed, f"workers={workers}: {frames.warnings}"
        assert corrupt or not any("another time" in w for w in frames.warnings), frames.warnings
        assert corrupt == bool(frames.damaged), frames.warnings
        bad += _compare(
            f"overview w{workers}", frames.times, frames.parts, src.meta.begin, reference,
            frames.damaged,
        )  # fmt: skip
        cfg = CropConfig(workers=workers)
        requests = [WindowRequest(src.path, a) for a in windows_of(src.meta.duration)]
        batch = execute_windows(requests, cfg, sources={src.path: src})
        assert corrupt or not getattr(src.decoders, "straight_decodes", 0)
        for n, result in enumerate(batch.results):
            assert result.ok, result.error
            assert corrupt or not (result.failed or result.damaged), result.warnings
            assert not result.damaged or "damaged part of the file" in result.message()
            parts = [result.clip.frame(i) for i in range(len(result.times))]
            bad += _compare(
                f"window {n} w{workers}", result.times, parts, src.meta.begin, reference,
                result.damaged,
            )  # fmt: skip
    assert not bad, f"{path.name}: {len(bad)} frames differ from a straight decode:\n" + "\n".join(
        bad[:12]
    )


@pytest.mark.parametrize("name", REAL)
def test_real_videos_equal_a_straight_decode(video_path, name):
    check_video(video_path(name), corrupt=name == "decord__corrupted.mp4")


@pytest.mark.parametrize("name", EXTRA)
def test_extra_kinds_equal_a_straight_decode(extra_videos, name):
    check_video(extra_videos[name])


@pytest.mark.parametrize("name", list(media.HARD_KINDS))
def test_hard_kinds_equal_a_straight_decode(hard_videos, name):
    videos, missing = hard_videos
    if name in missing:
        pytest.skip(missing[name])
    check_video(videos[name])


def test_the_hard_kinds_have_what_makes_them_hard(hard_videos):
    """The generators make what they say: demoted keyframes where the flags are not restart
    points, none where they are, and no frame table for the piped Matroska files."""
    videos, missing = hard_videos
    demoted = {
        name: len(VideoSource(path).table.demoted)
        for name, path in videos.items()
        if name not in missing
    }
    assert demoted["intra_refresh.mp4"] >= 2 and demoted["non_idr_i.mp4"] >= 2
    assert demoted["no_duration_intra_refresh.mkv"] >= 2
    assert demoted["open_gop.mp4"] == 0 and demoted["high444_open_gop.mp4"] == 0
    assert len(VideoSource(videos["open_gop.mp4"]).table.keyframes) >= 5  # recovery points kept
    src = VideoSource(videos["no_duration_intra_refresh.mkv"])
    assert not src.decoders.seeks_are_safe()  # decoded by video.sequential
    assert VideoSource(videos["no_duration_gops.mkv"]).decoders.seeks_are_safe()
    wide = VideoSource(videos["anamorphic.mp4"]).meta
    assert wide.sample_aspect_ratio == pytest.approx(4 / 3)
    assert (wide.width, wide.height) == media.HARD_SIZE
    assert wide.display_size == media.ANAMORPHIC_SHOWN
    assert VideoSource(videos["intra_refresh.mp4"]).meta.demoted_keyframes >= 2
