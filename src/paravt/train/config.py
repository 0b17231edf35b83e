"""``ParaGRPOConfig``: TRL's ``GRPOConfig`` plus paravt's PARA-GRPO knobs (docs/PROTOCOL.md §5).

Every TRL option keeps its meaning and passes straight through — ``beta``, ``epsilon``,
``loss_type``, ``num_generations``, ``gradient_checkpointing``, ``bf16``, the distributed options
of ``TrainingArguments`` (``fsdp``/``fsdp_config``, ``deepspeed``, ``ddp_backend``, ...) and TRL's
vLLM keys (``use_vllm``, ``vllm_mode``, ``vllm_server_*``, ``vllm_importance_sampling_*``, ...;
the episode engine samples through TRL's vLLM generator, see ``paravt.train.vllm_backend``). The
added fields below are the ones the paper's recipe needs and TRL does not have; the episode
engine's own knobs are one nested field, ``engine`` (the ``EngineConfig`` that ``infer``, ``eval``
and ``sft`` use, with training defaults), set from a recipe's top-level ``engine`` section; every
reward constant is another, ``rewards`` (``RewardConfig``), set from its ``rewards`` section.
Sampling (``temperature``, ``top_p``, ``top_k``: TRL's keys; evaluation is greedy) and nFrames
Gating stay here, since they are the trainer's and not the engine's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from trl import GRPOConfig

from paravt.agent.config import EngineConfig
from paravt.config import build, to_dict
from paravt.errors import ConfigError
from paravt.rewards.config import RewardConfig
from paravt.train.engine_config import TrainEngineConfig, sampling_set_on_engine
from paravt.train.gating import PAPER_CHOICES


@dataclass
class ParaGRPOConfig(GRPOConfig):
    """GRPOConfig + the episode engine's config (``engine``), the reward's (``rewards``), gating."""

    # HF declares ``fsdp: str | None`` but wants ``True`` (its string form is deprecated); widened so
    # that ``--set trainer.fsdp=true`` reaches it as a boolean.
    fsdp: bool | str | None = field(
        default=None,
        metadata={"help": "true = FSDP (tune it in fsdp_config: version, cpu_offload, ...)."},
    )
    engine: TrainEngineConfig = field(
        default_factory=TrainEngineConfig,
        metadata={
            "help": "The episode engine's config (paravt.agent.config.EngineConfig with training "
            "defaults: paravt.train.engine_config); a recipe sets it in its top-level engine "
            "section (--set engine.KEY=VALUE)."
        },
    )
    frames_gating: bool = field(default=True, metadata={"help": "nFrames Gating on/off."})
    gating_choices: list[int] = field(
        default_factory=lambda: list(PAPER_CHOICES), metadata={"help": "Values K is drawn from."}
    )
    rewards: RewardConfig = field(
        default_factory=RewardConfig,
        metadata={
            "help": "Every reward constant (paravt.rewards.config.RewardConfig); a recipe sets it "
            "in its top-level rewards section (--set rewards.KEY=VALUE)."
        },
    )
    subagent_in_loss: bool = field(
        default=False,
        metadata={"help": "Train on sub-agent trajectories with the episode's advantage."},
    )
    first_turn_text: str | None = field(
        default=None,
        metadata={
            "help": "Force the first assistant turn to this text (smoke tests with random models)."
        },
    )
    suppress_vision_tokens: bool = field(
        default=True, metadata={"help": "Never sample <|image_pad|>/<|vision_start|>/... tokens."}
    )
    sampling_logprobs: bool = field(
        default=False,
        metadata={
            "help": "Keep the sampler's logprobs (needed by off_policy_mask_threshold; costs memory)."
        },
    )
    episode_log: bool = field(
        default=True,
        metadata={"help": "Write episodes/rank{r}.jsonl (K, rewards, calls) in the run folder."},
    )
    metrics_file: str = field(
        default="metrics.jsonl", metadata={"help": "Per-step metrics (run folder)."}
    )

    def __post_init__(self):
        super().__post_init__()
        if isinstance(self.engine, dict):
            self.engine = build(TrainEngineConfig, self.engine, prefix="engine.")
        elif isinstance(self.engine, EngineConfig):
            self.engine = TrainEngineConfig.of(self.engine)
        else:
            raise ConfigError(
                f"engine={self.engine!r}: give an EngineConfig or a mapping of its keys"
            )
        sampling = sampling_set_on_engine(self.engine)
        if sampling:
            raise ConfigError(sampling)
        if self.frames_gating and not self.gating_choices:
            raise ConfigError("gating_choices is empty: give the K values, e.g. [4, 8, 16, 32, 64]")
        if any(int(k) < 1 for k in self.gating_choices):
            raise ConfigError("gating_choices must be ≥ 1 (frame budgets K)")
        if isinstance(self.rewards, dict):
            self.rewards = build(RewardConfig, self.rewards, prefix="rewards.")
        elif not isinstance(self.rewards, RewardConfig):
            raise ConfigError(
                f"rewards={self.rewards!r}: give a RewardConfig or a mapping of its keys"
            )
        if self.use_vllm:
            self._check_vllm_keys()

    def to_dict(self) -> dict:
        """HF's ``to_dict`` (what the run folder records as ``trainer_resolved``) with the nested
        engine config as plain data."""
        out = super().to_dict()
        out["engine"] = to_dict(self.engine)
        out["rewards"] = to_dict(self.rewards)
        return out

    def _check_vllm_keys(self) -> None:
        """The vLLM settings that cannot serve multi-turn episodes, refused before anything loads
        (whether vLLM is installed is checked where training starts: paravt.train.vllm_backend)."""
        if self.vllm_mode not in ("server", "colocate"):
            raise ConfigError(f"vllm_mode={self.vllm_mode!r}: use server or colocate")
        modes = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
        if (
            self.vllm_importance_sampling_correction
            and self.vllm_importance_sampling_mode not in modes
        ):
            raise ConfigError(
                f"vllm_importance_sampling_mode={self.vllm_importance_sampling_mode!r}: use "
                + ", ".join(modes)
            )
        if self.vllm_structured_outputs_regex:
            raise ConfigError(
                "vllm_structured_outputs_regex: one pattern would constrain every turn of an "
                "episode (tool calls, the forced answer, sub-agent summaries) alike; drop it"
            )
