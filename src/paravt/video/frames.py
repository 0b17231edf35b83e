"""What a decode returns: frames, the times they were really shown at, and what went wrong."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class Frames:
    """Decoded frames in presentation order.

    ``times`` are the decoded frames' own presentation times in seconds on the video's timeline
    (seconds since the first frame; equal to the pts for the usual stream that starts at 0), one
    per frame, strictly increasing. ``failed`` lists requested times whose frame did not decode;
    ``warnings`` says in words what was adjusted (clamped, de-duplicated, snapped, failed).
    ``indices`` are the frames' positions in the stream (presentation order), for comparison with
    index-based samplers.
    """

    data: torch.Tensor
    times: list[float]
    failed: list[float] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.times)

    @property
    def size(self) -> tuple[int, int] | None:
        """(height, width) of the frames, None when there are none."""
        if self.data.ndim != 4 or self.data.shape[0] == 0:
            return None
        return int(self.data.shape[2]), int(self.data.shape[3])
