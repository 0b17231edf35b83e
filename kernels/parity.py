"""Compare two ``pixel_values`` tensors in the unit the tolerances are stated in: uint8 steps.

Normalisation is undone (``v * 255*std + 255*mean``, rounded) so a difference of one resize
rounding step reads as 1 whatever the arch's std. Used by the tests and by ``bench-kernels``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from paravt.kernels.spec import arch_spec

__all__ = ["step_diff"]


@dataclass(frozen=True)
class StepDiff:
    """How far apart two results are: largest difference and share of values that differ."""

    max_steps: int
    share_differing: float
    values: int

    def as_dict(self) -> dict:
        return {
            "max_steps": self.max_steps,
            "share_differing": self.share_differing,
            "values": self.values,
        }


def to_uint8_grid(pv: torch.Tensor, arch: str) -> torch.Tensor:
    """pixel_values -> the uint8 values they were normalised from (int16, same layout)."""
    spec = arch_spec(arch)
    p2 = spec.temporal_patch_size * spec.patch_size * spec.patch_size
    m = torch.tensor(spec.mean, dtype=torch.float64).repeat_interleave(p2) * 255.0
    s = torch.tensor(spec.std, dtype=torch.float64).repeat_interleave(p2) * 255.0
    x = pv.detach().to("cpu", torch.float64) * s + m
    return x.round().to(torch.int16)


def step_diff(a: torch.Tensor, b: torch.Tensor, arch: str) -> StepDiff:
    """Difference of two same-layout ``pixel_values`` in uint8 steps."""
    if a.shape != b.shape:
        raise ValueError(f"layouts differ: {tuple(a.shape)} vs {tuple(b.shape)}")
    d = (to_uint8_grid(a, arch) - to_uint8_grid(b, arch)).abs()
    return StepDiff(int(d.max()) if d.numel() else 0, float((d > 0).float().mean()), d.numel())
