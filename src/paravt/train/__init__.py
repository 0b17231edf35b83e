"""PARA-GRPO on TRL: ``ParaGRPOConfig``, ``ParaGRPOTrainer``, nFrames Gating, recipes.

Only this room imports TRL's trainer. Heavy names load on first use so ``import paravt.train``
stays cheap; ``gated_frames`` is pure and always available.
"""

from paravt.train.gating import PAPER_CHOICES, gated_frames

__all__ = ["PAPER_CHOICES", "ParaGRPOConfig", "ParaGRPOTrainer", "PolicyBackend", "gated_frames"]


def __getattr__(name):
    if name == "ParaGRPOConfig":
        from paravt.train.config import ParaGRPOConfig  # loads trl: on first use

        return ParaGRPOConfig
    if name == "ParaGRPOTrainer":
        from paravt.train.trainer import ParaGRPOTrainer  # loads trl: on first use

        return ParaGRPOTrainer
    if name == "PolicyBackend":
        from paravt.rollout.policy import PolicyBackend  # loads torch: on first use

        return PolicyBackend
    raise AttributeError(name)
