"""``SourceDecoders``: the decoders of one open video, the seam that batch decoding goes through.

Why a class of its own: ``VideoSource`` is what a user holds (times in, frames out), while the
callers that decode many requests at once (``paravt.video.parallel`` splitting a plan into
lanes, ``paravt.tools.batch`` counting decoders per batch) need the machinery underneath: the
source's own decoder, more decoders on the same file for parallel lanes, and the filtered-packet
path of ``paravt.video.disposable``. They reach it through ``VideoSource.decoders``, an instance
of this class, and nothing else, so the source's private state stays private (torchcodec's shape:
a small public class over the private core).

Every decoder here has decoded the file's first frame before its first seek (``opening.prime``:
what the first packet told FFmpeg lasts for the decoder's life, and a decode from a later restart
point needs it), and is built from the frame table, so it seeks to restart points only
(``video.bitstream``). Where torchcodec refuses the table (no duration in the file's header) the
decoders are exact-mode ones; if the table demoted a keyframe they would seek to it, so such a
file is decoded packet by packet from its restart points instead (``video.sequential``).

Damage said, never garbage marked ok: a decode whose decoder logged an FFmpeg error
(``video.ffmpeg_log``) is settled (``settle``): its frames are decoded again straight from the
file's start (``sequential.decode_straight``), and the straight decode's frames are the ones
handed out, marked damaged where that decode logged errors too (the damage is in the file).

Thread safety: ``decode(indices)`` without a decoder uses the source's own decoder under a lock;
a decoder from ``new()`` belongs to the caller, which must not share it between threads.
"""

from __future__ import annotations

import logging
import threading

from paravt.video import ffmpeg_log
from paravt.video.decode import DecodeOutcome, FrameResize, decode_indices
from paravt.video.disposable import SKIPPABLE_CODECS, decode_skipping, worth_skipping
from paravt.video.meta import FrameTable
from paravt.video.opening import make_decoder
from paravt.video.sequential import decode_from_restart_points, decode_straight

__all__ = ["SourceDecoders"]

logger = logging.getLogger(__name__)


class SourceDecoders:
    """The decoders of one video: its own (built on first use), more on demand, and the decode
    without disposable pictures where it applies. ``created`` counts every decoder built."""

    def __init__(
        self,
        path: str,
        table: FrameTable,
        *,
        device: str,
        num_threads: int,
        skip_disposable: bool,
        codec: str | None,
        rotation: float | None,
    ):
        self.path = path
        self.table = table
        self.device = device
        self.num_threads = num_threads
        self.skip_disposable = skip_disposable
        self.codec = codec
        self.rotation = rotation
        #: decoders built so far (the own one and every ``new()``); tools.batch reports it per batch
        self.created = 0
        # built on first need: a keyframe overview or a window batch decoded from the filtered
        # packets (video.disposable) never needs it
        self._own = None
        # an exact-mode decoder of its own, only for counting frames as qwen-vl-utils does
        self._counting = None
        # whether torchcodec takes the frame table for this file (known once a decoder is built)
        self._mapped: bool | None = None
        self._lock = threading.Lock()
        self._skip_worth: bool | None = None  # H.264 with B-frames? asked once, on first decode
        #: straight decodes from the file's start (``settle``'s fault path) so far
        self.straight_decodes = 0

    def own(self):
        """The source's own decoder, built on first use and again after ``close()``."""
        with self._lock:
            return self._own_locked()

    def _own_locked(self):
        if self._own is None:
            self._own = self._build()
        return self._own

    def _build(self):
        built = make_decoder(self.path, self.device, self.num_threads, self.table)
        self.created += 1
        self._mapped = built.mapped
        return built.decoder

    def counted_frames(self) -> int:
        """The frame count of an exact-mode decoder (its own scan), which qwen-vl-utils samples
        from: it can differ from the table's (one frame more on a Matroska file here)."""
        with self._lock:
            if self._counting is None:
                self._counting = make_decoder(
                    self.path, self.device, self.num_threads, primed=False
                ).decoder
            return int(self._counting.metadata.num_frames or len(self.table))

    def seeks_are_safe(self) -> bool:
        """Whether a torchcodec decoder of this file seeks to restart points only: built from
        the table, or nothing was demoted. Builds the own decoder to find out."""
        if not self.table.demoted:
            return True
        if self._mapped is None:
            self.own()
        return bool(self._mapped)

    def built(self):
        """The own decoder if it has been built, else ``None`` (nothing is built): a batch lends
        it to a lane rather than build another."""
        return self._own

    def new(self):
        """Another decoder on the same file, for decoding a second GOP range in parallel; built
        from the frame table (no second scan of the file)."""
        return self._build()

    def decode_skipping(
        self, indices: list[int], resize: FrameResize | None = None
    ) -> DecodeOutcome | None:
        """The frames decoded without disposable pictures, or ``None`` where that does not apply
        (not H.264/HEVC, GPU decoding, a rotated stream, turned off, or any surprise on the way).
        Never raises; needs no decoder. ``resize``: as ``decode``."""
        if not (self.skip_disposable and self.device == "cpu"):
            return None
        if self.codec not in SKIPPABLE_CODECS or self.rotation not in (None, 0.0):
            return None
        if self._skip_worth is None:
            self._skip_worth = worth_skipping(self.path)
        if not self._skip_worth:
            return None
        return decode_skipping(self.path, self.table, indices, resize)

    def decode(
        self,
        indices: list[int],
        decoder=None,
        try_skipping: bool = True,
        resize: FrameResize | None = None,
    ) -> DecodeOutcome:
        """Decode sorted unique ``indices``: without disposable pictures where possible (unless
        ``try_skipping`` is off), else with ``decoder`` (or the own one, serialised). With
        ``resize`` every frame is resized right after it is decoded and only the resized frames
        are kept (``decode.RESIZE_CHUNK``). Settled (``settle``) before it is returned."""
        skipped = self.decode_skipping(indices, resize) if try_skipping else None
        if skipped is not None:
            return self.settle(skipped, resize)
        if not self.seeks_are_safe():
            return self.settle(
                decode_from_restart_points(
                    self.path, self.table, indices, resize, self.device, self.num_threads
                ),
                resize,
            )
        if decoder is not None:
            return self.settle(decode_indices(decoder, indices, resize), resize)
        with self._lock:
            out = decode_indices(self._own_locked(), indices, resize)
        return self.settle(out, resize)

    def settle(self, out: DecodeOutcome, resize: FrameResize | None = None) -> DecodeOutcome:
        """``out`` with its ``logged`` frames (their decoder call logged an FFmpeg error) decoded
        again straight from the file's start: those frames are replaced by the straight
        decode's, marked ``damaged`` where that decode logged errors too; a frame the straight
        decode does not return keeps the first decode's, marked damaged. ``out`` itself when
        nothing was logged (the usual case: no second decode)."""
        if not out.logged:
            return out
        again = sorted(out.logged)
        with self._lock:
            self.straight_decodes += 1
        logger.warning(
            "%s: FFmpeg reported errors decoding %d frames from a restart point (%s); decoding "
            "them straight from the file's start",
            self.path,
            len(again),
            ffmpeg_log.plain(out.logged[again[0]]),
        )
        straight = decode_straight(
            self.path, self.table, again, resize, self.device, self.num_threads
        )
        for i in again:
            if i in straight.frames:
                out.frames[i] = straight.frames[i]
                out.failed.pop(i, None)
                if i in straight.damaged:
                    out.damaged[i] = straight.damaged[i]
            elif i in out.frames:
                out.damaged[i] = out.logged[i]
        out.logged.clear()
        return out

    def close(self) -> None:
        """Drop the own decoders (a later decode builds them again)."""
        self._own = None
        self._counting = None
