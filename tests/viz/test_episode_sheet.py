"""The episode sheet: geometry from the layout object, pixels from a real render."""

from __future__ import annotations

import itertools
import os

import pytest
import torch
from PIL import Image

from paravt.errors import UserError
from paravt.schema.episodes import CallRecord, EpisodeRecord, ImageItem, TokenStream, TurnRecord
from paravt.viz.episode_sheet import check_writable, render, write_episode_sheet
from paravt.viz.layout import build_layout


def _frame(shade: int) -> torch.Tensor:
    f = torch.full((3, 90, 160), shade % 256, dtype=torch.uint8)
    f[0, :, : (shade % 160)] = 255  # a left-to-right stripe that differs per frame
    return f


def hour_record() -> EpisodeRecord:
    """A one-hour video, 64 overview frames, 3 turns of 5 parallel calls (one failing per turn)."""
    duration = 3600.0
    times = [duration * (i + 0.5) / 64 for i in range(64)]
    images = [ImageItem(_frame(i * 4), t, "overview", 0, 0) for i, t in enumerate(times)]
    calls, turns = [], []
    for turn in range(3):
        turns.append(TurnRecord(turn, f"<think>look at part {turn}</think>", n_calls=5))
        for k in range(5):
            start = 600.0 * k + 100.0 * turn
            if k == 4:
                calls.append(
                    CallRecord(
                        turn,
                        k,
                        "crop_video",
                        {"start_time": 90, "end_time": 30},
                        "error",
                        error="start_time must be < end_time",
                        error_kind="bad_arguments",
                    )
                )
                continue
            ts = [start + j * 10.0 for j in range(8)]
            calls.append(
                CallRecord(
                    turn,
                    k,
                    "crop_video",
                    {"start_time": start, "end_time": start + 80},
                    "ok",
                    start=start,
                    end=start + 80,
                    n_frames=8,
                    times=ts,
                )
            )
            images += [ImageItem(_frame(int(t)), t, "tool", 0, 0) for t in ts]
    turns.append(TurnRecord(3, "<answer>B</answer>", forced=True))
    return EpisodeRecord(
        id="long",
        video="hour.mp4",
        question="When does the dog jump over the fence?",
        question_type="mcq",
        options=["At the start", "In the middle", "At the end"],
        gold="B",
        mode="parallel",
        evidence="frames",
        prediction="B",
        answer_source="forced",
        forced=True,
        frames_k=64,
        overview_times=times,
        video_meta={"duration": duration},
        turns=turns,
        calls=calls,
        stream=TokenStream(images=images),
    )


def test_bars_sit_at_the_called_times_and_calls_of_a_turn_are_stacked():
    rec = hour_record()
    lay = build_layout(rec, width=1600)
    assert lay.width == 1600 and len(lay.overview) == 64 and len(lay.bars) == 15
    for bar, call in zip(lay.bars, rec.calls, strict=True):
        assert (bar.turn, bar.index, bar.status) == (call.turn, call.index, call.status)
        if bar.start < bar.end:
            assert bar.x0 == lay.x_of(bar.start)
            assert bar.x1 == max(lay.x_of(bar.start) + 3, lay.x_of(bar.end))
        else:  # the reversed window each turn asked for: a marker, never a bar
            assert not bar.placed and "asked 90.0-30.0 s" in bar.label
    # the call at 600 s of turn 0 sits a sixth of the way along the timeline
    bar = lay.bars[1]
    assert abs(bar.x0 - (lay.left + (lay.right - lay.left) / 6)) <= 1
    for turn in range(3):  # parallel calls of one turn: one row each, top to bottom, in one band
        ys = [b.y for b in lay.bars if b.turn == turn]
        assert ys == sorted(ys) and len(set(ys)) == 5
        band = lay.bands[turn]
        assert all(band.y0 <= y < band.y1 for y in ys)
    failed = [b for b in lay.bars if b.status == "error"]
    assert len(failed) == 3 and all("FAILED" in b.label and not b.thumbs for b in failed)
    ok = [b for b in lay.bars if b.status == "ok"]
    assert all(len(b.thumbs) == 8 for b in ok)
    assert [t.time for t in ok[0].thumbs] == rec.calls[0].times
    # overview thumbnails centred on their times, wide enough to see, not overlapping in a row
    for thumb in lay.overview:  # (or pushed inside the picture at its edges)
        at_edge = thumb.x == 0 or thumb.x + thumb.w == lay.width
        assert at_edge or abs(thumb.x + thumb.w // 2 - lay.x_of(thumb.time)) <= 1
    assert min(t.w for t in lay.overview) >= 80
    rows: dict[int, list] = {}
    for t in lay.overview:
        rows.setdefault(t.y, []).append(t)
    for row in rows.values():
        assert all(a.x + a.w <= b.x for a, b in itertools.pairwise(row))
    # the header holds question, answer and gold
    kinds = {k for k, _ in lay.header}
    assert {"question", "answer", "gold", "option"} <= kinds


def short_record() -> EpisodeRecord:
    """A 10.3 s video (the length of the pancake clip) and the calls a model makes of one: a
    window inside it, one asked past its end, one reversed; no answer could be read."""
    duration = 10.3
    times = [duration * (i + 0.5) / 8 for i in range(8)]
    images = [ImageItem(_frame(i * 30), t, "overview", 0, 0) for i, t in enumerate(times)]
    ts = [2.0 + j for j in range(4)]
    images += [ImageItem(_frame(int(t * 20)), t, "tool", 0, 0) for t in ts]
    calls = [
        CallRecord(0, 0, "crop_video", {"start_time": 2, "end_time": 6}, "ok",
                   start=2.0, end=6.0, n_frames=4, times=ts),
        CallRecord(0, 1, "crop_video", {"start_time": 30, "end_time": 120}, "error",
                   error="the window starts after the video ends", error_kind="bad_arguments"),
        CallRecord(0, 2, "crop_video", {"start_time": 8, "end_time": 3}, "error",
                   error="start_time must be < end_time", error_kind="bad_arguments"),
    ]  # fmt: skip
    return EpisodeRecord(
        id="short", video="pancake.mkv", question="What is flipped?", question_type="oe", options=None,
        gold="a pancake",
        mode="parallel", evidence="frames", prediction=None, answer_source="extracted",
        frames_k=8, overview_times=times, video_meta={"duration": duration},
        turns=[TurnRecord(0, "<think>look</think>", n_calls=3), TurnRecord(1, "hmm")],
        calls=calls, stream=TokenStream(images=images),
    )  # fmt: skip


def test_a_short_video_keeps_its_own_axis_and_only_valid_windows_are_bars():
    """The axis ran to the latest time any call asked for (2:00 for a 10 s clip, with the
    thumbnails bunched far from their ticks), a reversed window was drawn as a bar, and an
    answer nobody could read was printed as ``answer: None (extracted)``."""
    lay = build_layout(short_record(), width=1600)
    assert lay.duration == pytest.approx(10.3)
    assert lay.ticks[-1][1] == "0:10" and lay.ticks[-1][0] <= lay.right
    for thumb in lay.overview:  # every thumbnail on its own tick's time
        assert abs(thumb.x + thumb.w // 2 - lay.x_of(thumb.time)) <= 1
    inside, past_end, reversed_ = lay.bars
    assert inside.placed and (inside.x0, inside.x1) == (lay.x_of(2.0), lay.x_of(6.0))
    assert len(inside.thumbs) == 4
    assert not past_end.placed and "asked 30.0-120.0 s, not a window" in past_end.label
    assert not reversed_.placed and "asked 8.0-3.0 s, not a window" in reversed_.label
    answer = [text for kind, text in lay.header if kind == "answer"]
    assert answer == ["answer: none could be read from the final turn"]
    assert not any("None" in text for _, text in lay.header)


def test_render_has_the_layout_size_and_is_not_blank(tmp_path):
    rec = hour_record()
    lay = build_layout(rec, width=1600)
    img = render(lay)
    assert img.size == (1600, lay.height) and 600 < lay.height < 2400
    colours = img.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # frames, bars, text: not a blank page
    # the failed bar's colour is drawn at its place
    bad = next(b for b in lay.bars if b.status == "error")
    assert img.getpixel((bad.x0 + 1, bad.y + 1)) != (255, 255, 255)
    out = write_episode_sheet(rec, tmp_path / "sub" / "episode.png")
    assert Image.open(out).size == (1600, lay.height)


def test_a_record_without_pixels_still_draws(tmp_path):
    rec = hour_record()
    rec.stream.images = []
    lay = build_layout(rec, width=800)
    assert all(t.frame is None for t in lay.overview) and not any(b.thumbs for b in lay.bars)
    assert render(lay).size == (800, lay.height)


def test_check_writable_names_the_problem(tmp_path):
    assert check_writable(tmp_path / "new" / "e.png") == tmp_path / "new" / "e.png"
    with pytest.raises(UserError, match="PNG"):
        check_writable(tmp_path / "e.jpg")
    with pytest.raises(UserError, match="folder"):
        check_writable(tmp_path)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    with pytest.raises(UserError, match="cannot write"):
        check_writable(a_file / "e.png")


def test_check_writable_refuses_a_folder_it_cannot_write_in(tmp_path):
    """The "cannot write in" path, as every user meets it, root included: the nearest existing
    folder above the sheet is not a folder one can write in. As root (CI) permission bits do not
    bind, so the folder that cannot hold the sheet is one under a regular file, two levels up;
    where they do bind, a read-only folder is refused the same way."""
    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    with pytest.raises(
        UserError,
        match=r"cannot write in .*notes\.txt: it is a file, not a folder; choose a writable folder",
    ):
        check_writable(notes / "sheets" / "2026" / "e.png")
    assert notes.read_text() == "x" and not (tmp_path / "sheets").exists()  # nothing made
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if not os.access(locked, os.W_OK):  # permission bits bind for this user
            with pytest.raises(UserError, match="cannot write in .*locked"):
                check_writable(locked / "e.png")
    finally:
        locked.chmod(0o700)


def _boxes(layout):
    return [*layout.overview, *(t for bar in layout.bars for t in bar.thumbs)]


def _overlapping(boxes) -> list[tuple]:
    return [
        (a, b)
        for a, b in itertools.combinations(boxes, 2)
        if a.x < b.x + b.w and b.x < a.x + a.w and a.y < b.y + b.h and b.y < a.y + a.h
    ]


@pytest.mark.parametrize("k, bunched", [(16, True), (64, True), (256, False), (512, False)])
def test_no_two_thumbnails_overlap_and_all_stay_in_the_picture(k, bunched):
    """Frames bunched in a 2-second stretch (keyframe or qwen-vl-utils sampling) and hundreds of
    frames both overlapped; so did a window of 32 frames, which ran off the picture."""
    rec = hour_record()
    times = (
        [1800.0 + 2.0 * i / k for i in range(k)]
        if bunched
        else [3600.0 * (i + 0.5) / k for i in range(k)]
    )
    rec.overview_times = times
    rec.stream.images = [ImageItem(_frame(i), t, "overview", 0, 0) for i, t in enumerate(times)]
    window = [600.0 + j for j in range(32)]
    rec.calls[0].n_frames, rec.calls[0].times = 32, window
    rec.calls = [c for c in rec.calls if c.status != "ok" or c is rec.calls[0]]
    rec.stream.images += [ImageItem(_frame(int(t)), t, "tool", 0, 0) for t in window]
    layout = build_layout(rec)
    boxes = _boxes(layout)
    assert len(layout.overview) == k and len(layout.bars[0].thumbs) == 32
    assert not _overlapping(boxes)
    assert all(0 <= b.x and b.x + b.w <= layout.width for b in boxes)


def test_non_square_pixels_are_shown_at_their_display_shape():
    """A 160x90 frame whose pixels are twice as wide as high is a 320x90 picture: its
    thumbnails are four times wider than high, not 16:9."""
    rec = hour_record()
    square = build_layout(rec).overview[0]
    rec.video_meta = {**rec.video_meta, "pixel_aspect_ratio": 2.0}
    wide = build_layout(rec).overview[0]
    assert square.h / square.w == pytest.approx(90 / 160, abs=0.02)
    assert wide.h / wide.w == pytest.approx(90 / 320, abs=0.02)
    for text, value in (("64:45", 64 / 45), ("4/3", 4 / 3), ("nonsense", 1.0), (None, 1.0)):
        from paravt.viz.layout import pixel_aspect

        assert pixel_aspect({"sample_aspect_ratio": text}) == pytest.approx(value)
