"""What a decode returns: frames, the times they were really shown at, and what went wrong."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

__all__ = ["Frames"]


@dataclass
class Frames:
    """Decoded frames in presentation order.

    ``times`` are the decoded frames' own presentation times in seconds on the video's timeline
    (seconds since the first frame; equal to the pts for the usual stream that starts at 0), one
    per frame, strictly increasing. ``failed`` lists requested times whose frame did not decode;
    ``warnings`` says in words what was adjusted (clamped, de-duplicated, snapped, failed).
    ``indices`` are the frames' positions in the stream (presentation order), for comparison with
    index-based samplers. ``damaged`` lists the times of returned frames that were decoded after
    damage in the file (a damaged packet, a frame the decoder failed or returned late, since the
    last restart point): they may show concealment blocks, and whoever shows them says so.

    The frames are held as the decoder returned them (or at the size the caller's ``resize``
    gave them as they were decoded: ``VideoSource.overview``), one ``[3, H, W]`` tensor each
    (``frame(j)``), and stacked into one ``[n, 3, H, W]`` tensor (``data``) only when that is
    asked for. Why: the engine preprocesses frame by frame, and stacking 64 720p frames is a
    177 MB copy, ~0.1 s of a keyframe overview that would be thrown away.
    """

    parts: list[torch.Tensor]
    times: list[float]
    failed: list[float] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)
    damaged: list[float] = field(default_factory=list)
    #: (height, width) of a frame, for the empty ``data`` of a decode that returned none
    empty_size: tuple[int, int] = (0, 0)
    _stacked: torch.Tensor | None = field(default=None, init=False, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.times)

    def frame(self, j: int) -> torch.Tensor:
        """Frame ``j`` as a ``[3, H, W]`` uint8 tensor, without stacking the others."""
        return self.parts[j]

    @property
    def data(self) -> torch.Tensor:
        """All frames as one ``[n, 3, H, W]`` uint8 tensor, stacked on first use (channels-last
        in memory, the layout torchcodec decodes into: a plain copy, where a NCHW-contiguous
        stack transposes every pixel)."""
        if self._stacked is None:
            if self.parts:
                stacked = torch.stack([p.permute(1, 2, 0) for p in self.parts])
                self._stacked = stacked.permute(0, 3, 1, 2)
            else:
                h, w = self.empty_size
                self._stacked = torch.empty((0, 3, h, w), dtype=torch.uint8)
        return self._stacked

    @property
    def size(self) -> tuple[int, int] | None:
        """(height, width) of the frames, None when there are none."""
        if not self.parts:
            return None
        return int(self.parts[0].shape[1]), int(self.parts[0].shape[2])
