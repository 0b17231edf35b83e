"""nFrames Gating: the overview frame budget K of a prompt, as a pure function.

docs/PROTOCOL.md §5.5: K is drawn from a small set (paper: {4, 8, 16, 32, 64}) per prompt, but it
must be the same for every generation of a group, on whatever rank it runs, and reproducible across
runs and resumes. The reference seeded a process-wide RNG (group-unsafe) and then let a fixed-fps
setting override K (so it never changed). Here K is a hash of ``(seed, prompt id, epoch)``: no RNG
state, nothing to synchronise between ranks, nothing to save in a checkpoint.

Which K a step sees also depends on which prompts it draws. TRL's sampler shuffles each epoch
with one generator seeded once, so a resumed run (a new sampler, seeded afresh) drew the prompts
of its next epochs in another order than an uninterrupted run: same Ks per prompt, another K
sequence. ``EpochOrder`` reseeds that generator at the start of every epoch from
``(seed, epoch)``, as the trainer announces each epoch (``set_epoch``), so the order, and the K
sequence with it, is a pure function of the seed and the epoch too; epoch 0 keeps the seed itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

__all__: list[str] = []  # nothing here is for the other rooms

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


def epoch_seed(seed: int, epoch: int) -> int:
    """The shuffle seed of ``epoch``: ``seed`` itself at epoch 0, a stable hash after it."""
    if int(epoch) == 0:
        return int(seed)
    digest = hashlib.sha256(f"{int(seed)}\x1forder\x1f{int(epoch)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1  # a non-negative 63-bit torch seed


class EpochOrder:
    """A sampler with a shuffle generator (TRL's ``RepeatSampler``: ``generator``, ``seed``)
    whose order is reseeded per epoch from ``epoch_seed`` (see the module docstring). The
    trainer's data loader calls ``set_epoch`` before it iterates an epoch; everything else is
    the wrapped sampler's."""

    def __init__(self, sampler):
        self.sampler = sampler

    def set_epoch(self, epoch: int) -> None:
        generator = getattr(self.sampler, "generator", None)
        seed = getattr(self.sampler, "seed", None)
        if generator is not None and seed is not None:
            generator.manual_seed(epoch_seed(seed, epoch))

    def __iter__(self):
        return iter(self.sampler)

    def __len__(self) -> int:
        return len(self.sampler)
