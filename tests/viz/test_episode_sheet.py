"""The episode sheet: geometry from the layout object, pixels from a real render."""

from __future__ import annotations

import itertools
import os

import pytest
import torch
from PIL import Image

from paravt.agent.records import CallRecord, EpisodeRecord, ImageItem, TurnRecord
from paravt.errors import UserError
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
        images=images,
    )


def test_bars_sit_at_the_called_times_and_calls_of_a_turn_are_stacked():
    rec = hour_record()
    lay = build_layout(rec, width=1600)
    assert lay.width == 1600 and len(lay.overview) == 64 and len(lay.bars) == 15
    for bar, call in zip(lay.bars, rec.calls, strict=True):
        assert (bar.turn, bar.index, bar.status) == (call.turn, call.index, call.status)
        lo, hi = sorted((bar.start, bar.end))
        assert bar.x0 == lay.x_of(lo) and bar.x1 == max(lay.x_of(lo) + 3, lay.x_of(hi))
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
    rec.images = []
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
    with pytest.raises(UserError, match=r"cannot write in .*notes\.txt; choose a writable folder"):
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
