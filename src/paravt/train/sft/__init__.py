"""``paravt sft``: the cold start before PARA-GRPO — supervised fine-tuning on episodes that a
trajectory backend plays through the real episode engine (``trajectories``), batched as
pre-tokenised multimodal streams (``dataset``) and trained with TRL's ``SFTTrainer`` (``run``).

Heavy names load on first use so ``import paravt.train.sft`` stays cheap.
"""

__all__ = ["SFTConfig", "TrajectoryConfig", "load_sft_config", "run_sft"]


def __getattr__(name):
    if name in ("SFTConfig", "TrajectoryConfig"):
        from paravt.train.sft import config

        return getattr(config, name)
    if name in ("load_sft_config", "run_sft"):
        from paravt.train.sft import run

        return getattr(run, name)
    raise AttributeError(name)
