"""Decoding without disposable H.264/HEVC pictures gives exactly a full decode's frames, for less
work; and on every codec of the tool-execution benchmark the batch decode is a full decode's."""

from __future__ import annotations

import pytest
import torch

from paravt.tools.batch import execute_windows
from paravt.tools.results import CropConfig, WindowRequest
from paravt.video import VideoSource
from paravt.video.disposable import (
    decode_skipping,
    h264_has_idr,
    hevc_cra_as_bla,
    hevc_is_disposable,
    is_disposable,
    splice_rewrite,
    worth_skipping,
)
from paravt.video.nal import hvcc_layout

pytest.importorskip("av")


def _nal(ref_idc: int, nal_type: int, payload: bytes = b"\x88\x84") -> bytes:
    return bytes([(ref_idc << 5) | nal_type]) + payload


def _avcc(*nals: bytes) -> bytes:
    return b"".join(len(n).to_bytes(4, "big") + n for n in nals)


def _annexb(*nals: bytes) -> bytes:
    return b"".join(b"\x00\x00\x00\x01" + n for n in nals)


@pytest.mark.parametrize("pack,size", [(_avcc, 4), (_annexb, 0)])
def test_is_disposable_reads_nal_ref_idc_of_every_slice(pack, size):
    assert is_disposable(pack(_nal(0, 1)), size)
    assert is_disposable(pack(_nal(0, 6), _nal(0, 1), _nal(0, 1)), size)  # SEI + two slices
    assert not is_disposable(pack(_nal(2, 1)), size)  # a reference B/P slice
    assert not is_disposable(pack(_nal(3, 5)), size)  # IDR
    assert not is_disposable(pack(_nal(0, 1), _nal(2, 1)), size)  # one reference slice is enough
    assert not is_disposable(pack(_nal(0, 6)), size)  # no slice at all: keep it
    assert not is_disposable(b"", size)


def _full_decode(path, indices):
    """Frames ``indices`` (presentation order) of a decode of every packet from the first, with
    no seek: torchcodec's own packet decoder and colour converter (what ``VideoDecoder`` uses),
    so the pixels compare exactly, and no keyframe flag can send it anywhere."""
    from torchcodec.decoders import ColorConverter, Demuxer

    demuxer = Demuxer(str(path), streams="video")
    decoder, convert = demuxer.streams[0].make_decoder("cpu"), ColorConverter("cpu")
    frames = []
    for packet in demuxer:
        frames.extend((f.pts_seconds, convert.convert(f).data) for f in decoder.decode(packet))
    frames.extend((f.pts_seconds, convert.convert(f).data) for f in decoder.drain())
    frames.sort(key=lambda f: f[0])
    return torch.stack([frames[i][1] for i in indices]), [frames[i][0] for i in indices]


def _assert_same_as_full_decode(path, indices):
    src = VideoSource(path)
    out = decode_skipping(src.path, src.table, indices)
    assert out is not None, "the skipping path did not apply"
    data, pts = _full_decode(path, indices)
    assert sorted(out.frames) == indices and not out.failed and out.pictures_skipped > 0
    for j, i in enumerate(indices):
        frame, t = out.frames[i]
        assert t == pytest.approx(pts[j], abs=1e-9)
        assert torch.equal(frame, data[j]), f"frame {i} differs from a full decode"


def test_frames_equal_a_full_decode_across_several_gops(bframes_video):
    # 1 fps-like picks over three GOPs (keyframe every 90 frames), B-frames among them
    indices = [5, 31, 62, 89, 95, 130, 200, 201, 202, 269, 500]
    _assert_same_as_full_decode(bframes_video, indices)


def test_frames_equal_a_full_decode_on_an_open_gop_stream(open_gop_video):
    src = VideoSource(open_gop_video)
    indices = [0, 44, 88, 89, 90, 91, 179, 180, 300, 599]
    out = src.decoders.decode(indices)
    data, _ = _full_decode(open_gop_video, indices)
    assert not out.failed
    for j, i in enumerate(indices):
        assert torch.equal(out.frames[i][0], data[j]), f"frame {i} differs from a full decode"


def test_full_range_bt709_real_file_keeps_its_colours(video_path):
    path = video_path("torchcodec__bt709_full_range.mp4")
    n = VideoSource(path).meta.num_frames
    _assert_same_as_full_decode(path, sorted({n // 3, n // 2, n - 1}))


def test_streams_without_b_frames_are_not_demuxed_twice(gop_video, video_path):
    assert not worth_skipping(str(gop_video))  # x264 ultrafast: no B-frames
    assert not worth_skipping(str(video_path("decord__flipping_a_pancake.mkv")))  # no B-frames
    assert not worth_skipping(str(video_path("mediabunny__trim-buck-bunny.webm")))  # VP9
    assert worth_skipping(str(video_path("torchcodec__bt709_full_range.mp4")))


def test_corrupt_file_gives_the_same_outcome_with_and_without_skipping(video_path):
    path = video_path("decord__corrupted.mp4")
    fast, slow = VideoSource(path), VideoSource(path, skip_disposable=False)
    n = fast.meta.num_frames
    indices = list(range(0, n, max(1, n // 12)))
    a, b = fast.decoders.decode(indices), slow.decoders.decode(indices)
    assert sorted(a.frames) == sorted(b.frames) and a.failed.keys() == b.failed.keys()
    for i in a.frames:
        assert torch.equal(a.frames[i][0], b.frames[i][0])


@pytest.mark.parametrize("workers", [1, 2])
def test_crop_video_batch_is_identical_with_skipping_off(bframes_video, workers):
    calls = [(0.5, 12.5), (3.0, 9.0), (14.0, 19.5), (3.0, 9.0)]
    reqs = [WindowRequest(str(bframes_video), {"start_time": s, "end_time": e}) for s, e in calls]
    on = execute_windows(reqs, CropConfig(workers=workers))
    off = execute_windows(reqs, CropConfig(workers=workers, skip_disposable=False))
    assert on.stats.pictures_skipped > 0 and off.stats.pictures_skipped == 0
    assert on.stats.frames_decoded == off.stats.frames_decoded
    for a, b in zip(on.results, off.results, strict=True):
        assert a.ok and b.ok
        assert a.times == b.times and torch.equal(a.frames, b.frames)


def _hevc_nal(nal_type: int, temporal_id: int = 0) -> bytes:
    return bytes([nal_type << 1, temporal_id + 1]) + b"\xaf\x01"


@pytest.mark.parametrize("pack,size", [(_avcc, 4), (_annexb, 0)])
def test_hevc_is_disposable_only_for_non_reference_pictures_of_the_top_sub_layer(pack, size):
    assert hevc_is_disposable(pack(_hevc_nal(0)), size, 0)  # TRAIL_N, one sub-layer
    assert hevc_is_disposable(pack(_hevc_nal(39), _hevc_nal(0), _hevc_nal(0)), size, 0)  # SEI + 2
    assert hevc_is_disposable(pack(_hevc_nal(8)), size, 0)  # RASL_N
    assert not hevc_is_disposable(pack(_hevc_nal(1)), size, 0)  # TRAIL_R: a reference
    assert not hevc_is_disposable(pack(_hevc_nal(19)), size, 0)  # IDR
    assert not hevc_is_disposable(pack(_hevc_nal(0), _hevc_nal(1)), size, 0)
    # a _N picture of a lower sub-layer may be referenced by a higher one: keep it
    assert not hevc_is_disposable(pack(_hevc_nal(0, temporal_id=0)), size, 1)
    assert hevc_is_disposable(pack(_hevc_nal(0, temporal_id=1)), size, 1)
    assert not hevc_is_disposable(pack(_hevc_nal(32)), size, 0)  # a VPS alone: no picture
    assert hvcc_layout(None) is None and hvcc_layout(b"\x00\x00\x01\x40") is None  # Annex B


#: Short clips encoded like the benchmark's rows (bench_tool_exec.CODECS, same encoders, GOPs and
#: B-frames scaled down): 4 s, 256x144 @ 30, a keyframe every 1 s (the 2 s GOP row: every 2 s;
#: x265: open GOP, its default).
CODEC_CLIPS = {
    "x264_medium": ["-c:v", "libx264", "-preset", "medium", "-g", "30", "-bf", "3"],
    "x264_veryfast": ["-c:v", "libx264", "-preset", "veryfast", "-g", "30"],
    # the 2 s GOP row: keyframes exactly every 2 s (no scene-cut keyframes), 2 in 4 s
    "x264_veryfast_gop2": [
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-g",
        "60",
        "-keyint_min",
        "60",
        "-sc_threshold",
        "0",
    ],
    "x264_veryfast_open_gop": [
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-g",
        "30",
        "-x264-params",
        "open-gop=1",
    ],
    # recovery points that are not restart points: the filtered decode declines, frames decode
    # from the IDR (paravt.video.bitstream)
    "x264_veryfast_intra_refresh": [
        "-c:v",
        "libx264",
        "-preset",
        "veryfast",
        "-x264-params",
        "intra-refresh=1:keyint=30",
    ],
    "x265": ["-c:v", "libx265", "-preset", "veryfast", "-x265-params", "keyint=30:log-level=error"],
    "vp9": [
        "-c:v",
        "libvpx-vp9",
        "-deadline",
        "good",
        "-cpu-used",
        "5",
        "-g",
        "30",
        "-b:v",
        "300k",
    ],
    "testsrc2_x264": ["-c:v", "libx264", "-preset", "veryfast"],
}


def _encoded_clip(out, lavfi_source: str, seconds: int, args: list[str]):
    """``out`` encoded once from a lavfi source with ``args`` (``-c:v ENCODER ...``); the test
    skips when this ffmpeg lacks the encoder."""
    from media import MissingEncoder, ffmpeg_exe, has_encoder

    try:
        if not has_encoder(args[1]):
            pytest.skip(f"this ffmpeg has no {args[1]} encoder")
        exe = ffmpeg_exe()
    except MissingEncoder as e:
        pytest.skip(str(e))
    if not out.exists():
        import subprocess

        subprocess.run(
            [exe, "-y", "-loglevel", "error", "-f", "lavfi", "-i", lavfi_source,
             "-t", str(seconds), *args, "-pix_fmt", "yuv420p", str(out)],
            check=True,
        )  # fmt: skip
    return out


def _codec_clip(folder, name: str):
    source = "testsrc2" if name.startswith("testsrc2") else "mandelbrot"  # moving detail
    out = folder / f"{name}.{'webm' if name == 'vp9' else 'mp4'}"
    return _encoded_clip(out, f"{source}=size=256x144:rate=30", 4, CODEC_CLIPS[name])


def test_the_clips_cover_every_codec_of_the_benchmark():
    from repo_files import load_repo_file

    module = load_repo_file("benchmarks/bench_tool_exec.py", "bench_tool_exec")
    assert set(module.CODECS) == set(CODEC_CLIPS)


@pytest.mark.parametrize("name", sorted(CODEC_CLIPS))
@pytest.mark.parametrize("workers", [1, 2])
def test_batch_decode_equals_a_full_decode_on_every_benchmark_codec(media_dir, name, workers):
    path = _codec_clip(media_dir, name)
    calls = [(0.2, 2.7), (1.5, 3.9), (0.2, 2.7)]
    reqs = [WindowRequest(str(path), {"start_time": s, "end_time": e}) for s, e in calls]
    batch = execute_windows(reqs, CropConfig(workers=workers, max_frames=16, fps=4))
    src = VideoSource(path)
    # H.264 and HEVC skip pictures, unless a keyframe flag in range is not a restart point
    # (intra refresh: the filtered decode declines, video.disposable)
    skippable = src.meta.codec in ("h264", "hevc") and not src.table.demoted
    assert (batch.stats.pictures_skipped > 0) == skippable, batch.stats
    for r in batch.results:
        assert r.ok, r.error
        by_pts = {round(p - src.meta.begin, 6): i for i, p in enumerate(src.table.pts)}
        idx = [by_pts[round(t, 6)] for t in r.times]
        data, pts = _full_decode(path, idx)
        assert r.times == pytest.approx([p - src.meta.begin for p in pts], abs=1e-9)
        assert torch.equal(r.frames, data), f"{name}: a window differs from a full decode"


@pytest.mark.parametrize("name", sorted(CODEC_CLIPS))
@pytest.mark.parametrize("mode", ["exact", "keyframe"])
@pytest.mark.parametrize("workers", [1, 2])
def test_overview_equals_a_full_decode_on_every_benchmark_codec(media_dir, name, mode, workers):
    """The benchmark's overview cases (and the engine's overview): frame for frame what a plain
    exact-mode decode of the same indices gives, on one decoder or GOP-aligned lanes on two."""
    path = _codec_clip(media_dir, name)
    src = VideoSource(path)
    # 9 slots of 4/9 s on the 4 s clips: several per GOP (so two lanes have work), and the 1 s
    # keyframes lie 1/9 s from a slot's centre, well inside the snapping distance of 2/9 s
    k = 9
    plan, _ = src.overview_plan(k, mode)
    wanted = sorted({i for _, i in plan})
    if mode == "keyframe" and len(src.table.keyframes) >= 4:  # the 1 s GOP clips
        exact = {i for _, i in src.overview_plan(k, "exact")[0]}
        assert set(wanted) - exact <= set(src.table.keyframes), wanted
        assert len(set(wanted) - exact) >= 2, f"{name}: keyframe mode did not snap"
    frames = src.overview(k, mode, workers=workers)
    assert not frames.failed and frames.indices == wanted
    data, pts = _full_decode(path, wanted)
    assert frames.times == pytest.approx([p - src.meta.begin for p in pts], abs=1e-9)
    assert frames.data.shape == data.shape
    for j, i in enumerate(wanted):
        assert torch.equal(frames.data[j], data[j]), f"{name} {mode}: frame {i} differs"


def test_hevc_skipping_equals_a_full_decode_across_gops(media_dir):
    path = _codec_clip(media_dir, "x265")
    assert worth_skipping(str(path))
    _assert_same_as_full_decode(path, [3, 17, 29, 30, 47, 61, 88, 100, 119])


@pytest.mark.parametrize("name", ["x264_veryfast_gop2", "x265"])
def test_keyframes_alone_decode_from_their_own_packets_with_a_full_decodes_pixels(media_dir, name):
    # a keyframe overview: each GOP's stream ends at its keyframe, so the decoder never reads the
    # pictures its reordering delay would make it decode first; no decoder of the file is built
    path = _codec_clip(media_dir, name)
    src = VideoSource(path)
    keys = src.table.keyframes
    assert len(keys) >= 2 and worth_skipping(str(path))
    out = decode_skipping(src.path, src.table, keys)
    assert out is not None and sorted(out.frames) == keys and out.pictures_skipped == 0
    data, _ = _full_decode(path, keys)
    for j, i in enumerate(keys):
        assert torch.equal(out.frames[i][0], data[j]), f"{name}: keyframe {i} differs"
    frames = src.overview(len(keys), "keyframe", workers=2)
    assert set(frames.indices) <= set(keys)
    # the keyframe lanes take this path: no decoder of the file is built
    assert src.decoders.built() is None and src.decoders.created == 0
    assert torch.equal(frames.data, torch.stack(frames.parts))  # data: the parts, stacked


@pytest.mark.parametrize("pack,size", [(_avcc, 4), (_annexb, 0)])
def test_a_cra_slice_is_relabelled_bla_and_nothing_else_changes(pack, size):
    cra = bytes([21 << 1, 0x01]) + b"\xaf\x01"
    cra_tid = bytes([(21 << 1) | 0x01, 0x0A]) + b"\x55"  # layer-id high bit set, TemporalId 1
    parameters = pack(_hevc_nal(32), _hevc_nal(33), _hevc_nal(34))
    packet = pack(_hevc_nal(35), cra, cra_tid)
    out = hevc_cra_as_bla(packet, size)
    assert out == pack(_hevc_nal(35), bytes([16 << 1, 0x01]) + b"\xaf\x01",
                       bytes([(16 << 1) | 0x01, 0x0A]) + b"\x55")  # fmt: skip
    assert hevc_cra_as_bla(parameters, size) is parameters  # no CRA: the same bytes object
    assert hevc_cra_as_bla(pack(_hevc_nal(19)), size) == pack(_hevc_nal(19))  # an IDR stays


def _long_gop_clip(folder, name: str, seconds: int, args: list[str]):
    """128x72 @ 30 with keyframes exactly every ``-g`` frames, long enough that reaching one GOP
    from another jumps over more pictures than the picture order count's low bits cover."""
    return _encoded_clip(folder / f"{name}.mp4", "mandelbrot=size=128x72:rate=30", seconds, args)


def test_hevc_jumps_past_half_the_picture_order_range_keep_the_fast_path(media_dir):
    # x265 codes 8 low bits of the picture order count: from one 150-picture GOP's keyframe to
    # the next is a jump of more than 128, after which an unmodified CRA keyframe came out of the
    # decoder out of order (its frames did not come back at their pts: the normal decode ran)
    path = _long_gop_clip(
        media_dir,
        "x265_gop150",
        20,
        ["-c:v", "libx265", "-preset", "veryfast",
         "-x265-params", "keyint=150:min-keyint=150:scenecut=0:log-level=error"],
    )  # fmt: skip
    src = VideoSource(path)
    keys = src.table.keyframes
    assert keys == [0, 150, 300, 450]
    windows = sorted({*range(5, 40, 7), *range(303, 360, 9), *range(560, 600, 13)})
    for indices in (keys, keys[::2], [keys[0], keys[3]], windows):
        out = decode_skipping(src.path, src.table, indices)
        assert out is not None, f"{indices}: the skipping path fell back"
        data, pts = _full_decode(path, indices)
        for j, i in enumerate(indices):
            assert out.frames[i][1] == pytest.approx(pts[j], abs=1e-9)
            assert torch.equal(out.frames[i][0], data[j]), f"frame {i} differs"


def test_open_gop_h264_jumps_start_a_stream_of_their_own_with_a_full_decodes_frames(media_dir):
    # x264 open GOPs: keyframes are non-IDR I pictures, which a long jump left with the wrong
    # picture order count (a frame went missing and the lane decoded the normal way); H.264 has
    # nothing to relabel them with, so the filtered stream starts anew at such a keyframe
    path = _long_gop_clip(
        media_dir,
        "x264_open_gop300",
        40,
        ["-c:v", "libx264", "-preset", "veryfast", "-g", "300", "-keyint_min", "300",
         "-sc_threshold", "0", "-x264-params", "open-gop=1"],
    )  # fmt: skip
    src = VideoSource(path)
    keys = src.table.keyframes
    assert keys == [0, 300, 600, 900]
    for indices in (keys, keys[::2], sorted({*range(5, 40, 7), *range(903, 960, 9)})):
        out = decode_skipping(src.path, src.table, indices)
        assert out is not None, f"{indices}: the skipping path fell back"
        data, _ = _full_decode(path, indices)
        assert sorted(out.frames) == indices and not out.failed
        for j, i in enumerate(indices):
            assert torch.equal(out.frames[i][0], data[j]), f"frame {i} differs"


@pytest.mark.parametrize("pack,size", [(_avcc, 4), (_annexb, 0)])
def test_an_h264_keyframe_is_spliced_in_only_when_it_is_an_idr_picture(pack, size):
    splice = splice_rewrite("h264", None if size == 0 else b"\x01\x64\x00\x1f\xff\xe1\x00")
    idr = pack(_nal(3, 7), _nal(3, 8), _nal(3, 5))  # SPS, PPS, IDR slice
    assert h264_has_idr(idr, size) and splice(idr) == idr
    i_slice = pack(_nal(0, 6), _nal(3, 1))  # SEI (recovery point), non-IDR slice
    assert not h264_has_idr(i_slice, size) and splice(i_slice) is None
    assert splice_rewrite("vp9", None) is None
