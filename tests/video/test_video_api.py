"""The public surface of ``paravt.video`` stays small, in torchcodec's style: one positional
argument, keyword-only options, the decoder pool behind one documented seam
(``VideoSource.decoders``, a ``SourceDecoders``), no fields that nobody reads."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from paravt.video import VideoSource
from paravt.video.decode import DecodeOutcome

#: What a user of ``VideoSource`` may call; everything else has a leading underscore.
#: ``decoders`` and ``assemble`` are the seam for batch decoding (video.parallel, tools.batch).
PUBLIC = {
    "path", "device", "num_threads", "skip_disposable", "table", "meta", "open_warnings",
    "close", "index_at", "time_of", "overview_plan", "overview_times", "overview", "frames_at",
    "decoders", "assemble",
}  # fmt: skip
#: The seam's own surface (``paravt.video.decoders.SourceDecoders``), held to a list the same way.
DECODERS_PUBLIC = {
    "path", "table", "device", "num_threads", "skip_disposable", "codec", "rotation", "created",
    "own", "built", "new", "decode_skipping", "decode", "close", "counted_frames",
    "seeks_are_safe", "settle", "straight_decodes",
}  # fmt: skip


def test_options_after_path_are_keyword_only(gop_video):
    params = list(inspect.signature(VideoSource).parameters.values())
    assert params[0].name == "path" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[1:]), params
    with pytest.raises(TypeError):
        VideoSource(gop_video, "cpu")
    assert VideoSource(gop_video, device="cpu", num_threads=1).meta.num_frames == 360


def test_decoder_pool_internals_are_private(gop_video):
    with VideoSource(gop_video) as src:
        public = {n for n in dir(src) if not n.startswith("_")}
        seam = {n for n in dir(src.decoders) if not n.startswith("_")}
    assert public == PUBLIC, f"new public names: {public - PUBLIC}; gone: {PUBLIC - public}"
    assert seam == DECODERS_PUBLIC, f"new: {seam - DECODERS_PUBLIC}; gone: {DECODERS_PUBLIC - seam}"


def test_decode_outcome_holds_only_what_is_read():
    assert [f.name for f in dataclasses.fields(DecodeOutcome)] == [
        "frames", "failed", "pictures_skipped", "logged", "damaged"
    ]  # fmt: skip
