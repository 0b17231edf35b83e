"""``ParaGRPOConfig``: TRL's ``GRPOConfig`` plus paravt's PARA-GRPO knobs (docs/PROTOCOL.md §5).

Every TRL option keeps its meaning and passes straight through — ``beta``, ``epsilon``,
``loss_type``, ``num_generations``, ``gradient_checkpointing``, ``bf16``, the distributed options
of ``TrainingArguments`` (``fsdp``/``fsdp_config``, ``deepspeed``, ``ddp_backend``, ...) and TRL's
vLLM keys (``use_vllm``, ``vllm_mode``, ``vllm_server_*``, ``vllm_importance_sampling_*``, ...;
the episode engine samples through TRL's vLLM generator, see ``paravt.train.vllm_backend``). The
added fields below are the ones the paper's recipe needs and TRL does not have.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from trl import GRPOConfig

from paravt.errors import ConfigError
from paravt.rewards.config import DEFAULT_TOKEN_ANCHOR_VALUES
from paravt.train.gating import PAPER_CHOICES


@dataclass
class ParaGRPOConfig(GRPOConfig):
    """GRPOConfig + dispatch/evidence modes, gating, think prefix, anchoring and video knobs."""

    # HF declares ``fsdp: str | None`` but wants ``True`` (its string form is deprecated); widened so
    # that ``--set trainer.fsdp=true`` reaches it as a boolean.
    fsdp: bool | str | None = field(
        default=None,
        metadata={"help": "true = FSDP (tune it in fsdp_config: version, cpu_offload, ...)."},
    )
    dispatch_mode: str = field(
        default="parallel", metadata={"help": "parallel | sequential | direct (PROTOCOL §1)."}
    )
    evidence_mode: str = field(default="frames", metadata={"help": "frames | subagent."})
    max_turns: int = field(default=3, metadata={"help": "Tool rounds per episode."})
    max_parallel: int = field(default=5, metadata={"help": "Calls executed per turn."})
    max_turn_tokens: int = field(default=2048, metadata={"help": "New tokens per assistant turn."})
    overview_frames: int = field(default=64, metadata={"help": "K when gating is off."})
    frames_gating: bool = field(default=True, metadata={"help": "nFrames Gating on/off."})
    gating_choices: list[int] = field(
        default_factory=lambda: list(PAPER_CHOICES), metadata={"help": "Values K is drawn from."}
    )
    timestamps: bool = field(default=True, metadata={"help": "`<t seconds>` before each frame."})
    min_pixels: int = field(default=784, metadata={"help": "Per-frame pixel floor."})
    max_pixels: int = field(default=50176, metadata={"help": "Per-frame pixel ceiling."})
    window_max_frames: int = field(default=16, metadata={"help": "Frames per crop_video window."})
    video_device: str = field(default="cpu", metadata={"help": "Decode device (cpu | cuda)."})
    think_prefix: str = field(
        default="<think>\n",
        metadata={"help": "Prompt suffix pre-filling the think tag ('' = off)."},
    )
    system_prompt: str | None = field(
        default=None,
        metadata={
            "help": "A file whose text replaces the system prompt verbatim (null = the packaged "
            "prompt of dispatch_mode); e.g. a short prompt that a small model can afford."
        },
    )
    format_weight: float = field(
        default=1.0, metadata={"help": "w_fmt in R = R_acc + w_fmt R_fmt + R_tool."}
    )
    anchor_lambda: float = field(
        default=0.5, metadata={"help": "λ_anchor on the anchor format term."}
    )
    token_anchor: bool = field(
        default=False, metadata={"help": "Add the per-token anchor bonus to the advantages."}
    )
    token_anchor_values: dict = field(
        default_factory=lambda: dict(DEFAULT_TOKEN_ANCHOR_VALUES),
        metadata={"help": "Structural token text → advantage bonus."},
    )
    oe_metric: str = field(default="f1", metadata={"help": "Open-ended accuracy: f1 | exact."})
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

        if self.dispatch_mode not in ("parallel", "sequential", "direct"):
            raise ConfigError(
                f"dispatch_mode={self.dispatch_mode!r}: use parallel, sequential or direct"
            )
        if self.evidence_mode not in ("frames", "subagent"):
            raise ConfigError(f"evidence_mode={self.evidence_mode!r}: use frames or subagent")
        if self.frames_gating and not self.gating_choices:
            raise ConfigError("gating_choices is empty: give the K values, e.g. [4, 8, 16, 32, 64]")
        if any(int(k) < 1 for k in self.gating_choices) or self.overview_frames < 1:
            raise ConfigError("frame budgets (gating_choices, overview_frames) must be ≥ 1")
        if self.system_prompt is not None and not Path(self.system_prompt).is_file():
            raise ConfigError(
                f"system_prompt={self.system_prompt!r} is not a file: give a text file, or null "
                "for the packaged prompt"
            )
        if self.oe_metric not in ("f1", "exact"):
            raise ConfigError(f"oe_metric={self.oe_metric!r}: use f1 or exact")
        if self.use_vllm:
            self._check_vllm_keys()

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
