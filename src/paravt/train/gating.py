"""nFrames Gating: the overview frame budget K of a prompt, as a pure function.

docs/PROTOCOL.md §5.5: K is drawn from a small set (paper: {4, 8, 16, 32, 64}) per prompt, but it
must be the same for every generation of a group, on whatever rank it runs, and reproducible across
runs and resumes. The reference seeded a process-wide RNG (group-unsafe) and then let a fixed-fps
setting override K (so it never changed). Here K is a hash of ``(seed, prompt id, epoch)``: no RNG
state, nothing to synchronise between ranks, nothing to save in a checkpoint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

PAPER_CHOICES: tuple[int, ...] = (4, 8, 16, 32, 64)


def gated_frames(
    seed: int,
    prompt_id: str,
    epoch: int,
    choices: Sequence[int] = PAPER_CHOICES,
    enabled: bool = True,
    fixed: int = 64,
) -> int:
    """K for one prompt: uniform over ``choices`` by a stable hash; ``fixed`` when gating is off."""
    if not enabled:
        return int(fixed)
    if not choices:
        raise ValueError("frames gating needs at least one choice of K")
    key = f"{int(seed)}\x1f{prompt_id}\x1f{int(epoch)}".encode()
    digest = hashlib.sha256(key).digest()
    return int(choices[int.from_bytes(digest[:8], "big") % len(choices)])
