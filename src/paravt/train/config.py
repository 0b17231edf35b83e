"""``ParaGRPOConfig``: TRL's ``GRPOConfig`` plus paravt's PARA-GRPO knobs (docs/PROTOCOL.md §5).

Every TRL option keeps its meaning and passes straight through — ``beta``, ``epsilon``,
``loss_type``, ``num_generations``, ``gradient_checkpointing``, ``bf16``, the distributed options
of ``TrainingArguments`` (``fsdp``/``fsdp_config``, ``deepspeed``, ``ddp_backend``, ...) and TRL's
vLLM keys (``use_vllm``, ``vllm_mode``, ``vllm_server_*``, ``vllm_importance_sampling_*``, ...;
the episode engine samples through TRL's vLLM generator, see ``paravt.rollout.vllm``). The
few that only TRL's own rollout reads, and that the episode rollout cannot honour, are refused
at start (``REFUSED``: a one-line ``ConfigError`` naming the key and the fix). The
added fields below are the ones the paper's recipe needs and TRL does not have; the episode
engine's own knobs are one nested field, ``engine`` (the ``EngineConfig`` that ``infer``, ``eval``
and ``sft`` use, with training defaults), set from a recipe's top-level ``engine`` section; every
reward constant is another, ``rewards`` (``RewardConfig``), set from its ``rewards`` section.
Sampling (``temperature``, ``top_p``, ``top_k``: TRL's keys; evaluation is greedy) and nFrames
Gating stay here, since they are the trainer's and not the engine's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from trl import GRPOConfig

from paravt.agent.config import EngineConfig
from paravt.config import Section, build, check_choices, section_of, to_dict
from paravt.errors import ConfigError
from paravt.rewards.config import RewardConfig
from paravt.rollout.vllm_servers import as_list
from paravt.train.advantages import shaping_problem
from paravt.train.engine_config import TrainEngineConfig, sampling_set_on_engine
from paravt.train.gating import PAPER_CHOICES

__all__ = ["ParaGRPOConfig", "ParaGRPOKeys", "REFUSED", "learner_dtype"]

#: the dtypes ``vllm_dtype`` may name (vLLM's ``LLM(dtype=...)``)
VLLM_DTYPES = ("auto", "float32", "bfloat16", "float16")


def learner_dtype(args: Any) -> str:
    """The dtype a trainer's policy is loaded in (``paravt.train.run.load_model``, for PARA-GRPO
    and SFT alike): ``bfloat16`` with ``bf16``, ``float16`` with ``fp16``, else ``float32``. The
    one rule, so that colocated vLLM (``vllm_dtype = "learner"``) samples what the learner
    trains."""
    if getattr(args, "bf16", False):
        return "bfloat16"
    return "float16" if getattr(args, "fp16", False) else "float32"


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
    episode_dump_every: int = field(
        default=0,
        metadata={
            "help": "Every Nth step (1, N+1, ...), dump whole episodes (turns, calls, reward "
            "terms, K, frames shrunk) to episodes/dump-rank{r}.jsonl for `paravt view`; 0: off."
        },
    )
    episode_dump_max_mb: float = field(
        default=200.0, metadata={"help": "The episode dump stops once episodes/ holds this much."}
    )
    episode_dump_thumb: int = field(
        default=160, metadata={"help": "Width in pixels the dumped frames are shrunk to."}
    )
    metrics_file: str = field(
        default="metrics.jsonl", metadata={"help": "Per-step metrics (run folder)."}
    )
    # -- server mode through paravt's own client (paravt.rollout.vllm_server) --------
    vllm_weight_push: Literal["folder", "nccl"] = field(
        default="folder",
        metadata={
            "help": "Server mode: how the weights reach the server each step. folder = write "
            "safetensors under vllm_push_dir and have the server reload them (any device; the "
            "server must read that folder); nccl = vLLM's NCCL weight transfer (GPUs; not run "
            "here). paravt.rollout.weight_push says why."
        },
    )
    vllm_push_dir: str | None = field(
        default=None,
        metadata={"help": "Server mode, folder push: where (default: OUTPUT_DIR/vllm-weights)."},
    )
    # -- the weight push's gather, writes and overlap (paravt.rollout.weight_push) ------------
    vllm_push_bucket_mb: float = field(
        default=512.0,
        metadata={
            "help": "Server mode: the weights are gathered (ZeRO-3 / FSDP2 shards) and sent in "
            "the serving dtype bucket by bucket, at most this many MB each (a tensor larger than "
            "that is a bucket of its own); the folder push writes one safetensors shard a bucket."
        },
    )
    vllm_push_threads: int = field(
        default=4,
        metadata={"help": "Server mode, folder push: shards written at once (threads)."},
    )
    vllm_push_overlap: bool = field(
        default=True,
        metadata={
            "help": "Server mode, folder push: the push returns once the weights are gathered, "
            "and rank 0 writes them and has the server reload while the learner goes on (the "
            "rollout's first video work; with max_staleness the old and reference log-prob "
            "passes). No request is sent under the new weights before the server holds them, "
            "and the step waits for them before its optimizer step. Weights not whole on the "
            "host (GPUs, FSDP2, ZeRO-3): rank 0 holds the gathered model (serving dtype) in host "
            "memory meanwhile. false: the push returns once the server holds the weights, with "
            "at most vllm_push_threads + 1 gathered buckets in memory."
        },
    )
    # one server or several, and a run that outlives their outages (paravt.rollout.vllm_servers;
    # docs/train/VLLM.md, "Server outages and several servers"). The waits add up under ddp_timeout:
    # a rank's rollout can keep the others in a collective at most deadline + outage budget,
    # and one request at most (retries + 1) x request timeout (refused otherwise, at start)
    vllm_server_base_url: list[str] | None = field(
        default=None,
        metadata={
            "help": "Server mode: the vLLM server(s), http://HOST:PORT each: one URL or a list "
            "(episodes routed by id, each to one server; weights pushed to every live one). "
            "None: vllm_server_host and vllm_server_port."
        },
    )
    vllm_outage_budget_s: float = field(
        default=600.0,
        metadata={
            "help": "Server mode: seconds one step's rollout may wait with no server answering "
            "(a restart); the requests in flight are resubmitted once one is back with the "
            "step's weights. Past it every rank stops with one line, after saving a checkpoint."
        },
    )
    vllm_episode_deadline_s: float = field(
        default=900.0,
        metadata={
            "help": "Server mode: an episode's server time (outages not counted): a request past "
            "it stops the run with one line, after saving a checkpoint."
        },
    )
    vllm_server_retries: int = field(
        default=2,
        metadata={
            "help": "Server mode: extra attempts of a request the server answered busy "
            "(429/5xx); a server that does not answer at all is down (vllm_outage_budget_s)."
        },
    )
    vllm_server_backoff_s: float = field(
        default=1.0,
        metadata={"help": "Server mode: the first wait between attempts (doubling each time)."},
    )
    vllm_server_request_timeout_s: float = field(
        default=300.0,
        metadata={"help": "Server mode: the longest one request may take (then: down)."},
    )
    vllm_check_weights: bool = field(
        default=True,
        metadata={
            "help": "Server mode: compare the server's logprobs of a fixed probe with the "
            "policy's before the first push (another model or revision is refused) and after "
            "every push (a push the server did not take stops the run)."
        },
    )
    # -- bounded staleness (paravt.rollout.producer) ---------------------------------------
    max_staleness: int = field(
        default=0,
        metadata={
            "help": "k: how many policy versions an episode may lag the learner. 0 is the "
            "synchronous loop (push, roll out, learn). k >= 1 (server mode only): rollouts of "
            "steps up to k ahead run while the trainers learn; the loss is the decoupled PPO "
            "objective (the sampler's log-probs the behaviour policy, the step's old log-probs "
            "the proximal one, token-level truncated importance weights: "
            "vllm_importance_sampling_correction with a token_* mode); a group older than k is "
            "dropped and sampled again. The paper's run: 2 (AReaL max_head_offpolicyness)."
        },
    )
    producer: str = field(
        default="thread",
        metadata={
            "help": "Where the producer's sampling runs at max_staleness >= 1: 'thread' (threads "
            "of the trainer's process) or 'process' (a child process a trainer rank, which "
            "decodes, preprocesses and tokenises there and hands the learner finished episodes "
            "through a queue, tensors in shared memory: paravt.rollout.producer_process)."
        },
    )
    max_staleness_pause_s: float | None = field(
        default=None,
        metadata={
            "help": "Not used any more: a weight push no longer waits for the sampling "
            "requests under way (they go on across it, tagged with the version they started "
            "under: paravt.rollout.gate). Kept so that recipes which set it still load; "
            "resolved in the recorded config as before."
        },
    )
    # TRL logs the prompts' images with the completions table; paravt's episodes have no such
    # images to give it (REFUSED below), so the default is off here
    log_multimodal: bool = field(
        default=False,
        metadata={"help": "Refused when true: the completions table holds text only in paravt."},
    )
    vllm_dtype: str = field(
        default="learner",
        metadata={
            "help": "The dtype colocated vLLM samples in: 'learner' (the policy's own, resolved "
            "in the recorded config: bfloat16 with bf16, float16 with fp16, else float32) or a "
            "vLLM dtype (auto, float32, bfloat16, float16). TRL passes none, and vLLM on CPU then "
            "samples an fp32 policy in bf16. Server mode: the server samples in its own "
            "--dtype, and the weights are pushed in it (read from the server; this key when the "
            "server does not say)."
        },
    )
    vllm_seed: int | None = field(
        default=None,
        metadata={
            "help": "Colocated vLLM's sampling seed; None = the trainer's seed (resolved in the "
            "recorded config). Rank r's engine gets vllm_seed + r // vllm_tensor_parallel_size; "
            "TRL seeds with r alone, so every run shared one sampling stream. Server mode: the "
            "server's own --seed."
        },
    )

    def __post_init__(self):
        super().__post_init__()
        check_choices(self)  # vllm_weight_push (Literal)
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
        if self.vllm_dtype == "learner":
            self.vllm_dtype = learner_dtype(self)
        if self.vllm_dtype not in VLLM_DTYPES:
            raise ConfigError(
                f"vllm_dtype={self.vllm_dtype!r}: use learner or one of {', '.join(VLLM_DTYPES)}"
            )
        if self.vllm_seed is None:
            self.vllm_seed = int(self.seed)
        if self.use_vllm:
            self._check_vllm_keys()
        held = request_hold_s(self)
        if self.max_staleness_pause_s is None:
            self.max_staleness_pause_s = held
        staleness = staleness_problem(self) or shaping_problem(self)
        if staleness:
            raise ConfigError(staleness)
        refused = refused_option(self)
        if refused:
            raise ConfigError(refused)

    def to_dict(self) -> dict:
        """HF's ``to_dict`` (what the run folder records as ``trainer_resolved``) with the nested
        engine config as plain data."""
        out = super().to_dict()
        out["engine"] = to_dict(self.engine)
        out["rewards"] = to_dict(self.rewards)
        return out

    def _check_vllm_keys(self) -> None:
        """The vLLM settings that cannot serve multi-turn episodes, refused before anything loads
        (whether vLLM is installed is checked where training starts: paravt.rollout.vllm)."""
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
        if self.vllm_push_bucket_mb <= 0 or self.vllm_push_threads < 1:
            raise ConfigError(
                f"vllm_push_bucket_mb={self.vllm_push_bucket_mb} and vllm_push_threads="
                f"{self.vllm_push_threads}: use a bucket > 0 MB and at least 1 thread"
            )
        if self.vllm_server_retries < 0 or self.vllm_server_backoff_s < 0:
            raise ConfigError("vllm_server_retries and vllm_server_backoff_s must be >= 0")
        if self.vllm_mode == "server":
            self._check_server_waits()
        if self.vllm_structured_outputs_regex:
            raise ConfigError(
                "vllm_structured_outputs_regex: one pattern would constrain every turn of an "
                "episode (tool calls, the forced answer, sub-agent summaries) alike; drop it"
            )

    def _check_server_waits(self) -> None:
        """Server mode's waits fit under ``ddp_timeout`` (the field block's comment), and
        several servers need the folder push."""
        self.vllm_server_base_url = as_list(self.vllm_server_base_url) or None
        urls = self.vllm_server_base_url or []
        if len(urls) > 1 and self.vllm_weight_push != "folder":
            raise ConfigError(
                f"trainer.vllm_server_base_url lists {len(urls)} servers: several servers need "
                "trainer.vllm_weight_push=folder (the nccl push has one server's group)"
            )
        if self.vllm_outage_budget_s <= 0 or self.vllm_episode_deadline_s <= 0:
            raise ConfigError(
                "trainer.vllm_outage_budget_s and trainer.vllm_episode_deadline_s must be > 0"
            )
        limit = float(self.ddp_timeout)
        retries, timeout = self.vllm_server_retries, self.vllm_server_request_timeout_s
        one_request = (retries + 1) * timeout + self.vllm_server_backoff_s * (2**retries - 1)
        if one_request >= limit:
            raise ConfigError(
                f"trainer.vllm_server_retries={retries} x vllm_server_request_timeout_s="
                f"{timeout:g} lets one request take {one_request:.0f} s, not below "
                f"trainer.ddp_timeout={limit:.0f} s: the other ranks would die in a collective "
                "first; lower the retries or the timeout, or raise ddp_timeout"
            )
        held = self.vllm_episode_deadline_s + self.vllm_outage_budget_s
        if held >= limit:
            raise ConfigError(
                f"trainer.vllm_episode_deadline_s={self.vllm_episode_deadline_s:g} + "
                f"vllm_outage_budget_s={self.vllm_outage_budget_s:g} = {held:.0f} s is not below "
                f"trainer.ddp_timeout={limit:.0f} s: a rank's rollout could keep the others "
                "in a collective past it; lower one of them, or raise ddp_timeout"
            )


if TYPE_CHECKING:  # the keys are ParaGRPOConfig's, made at import (section_of)
    _ParaGRPOKeys = Section
else:
    _ParaGRPOKeys = section_of(
        ParaGRPOConfig,
        "ParaGRPOKeys",
        exclude=("output_dir", "engine", "rewards"),
        defaults={"save_only_model": False},
    )


class ParaGRPOKeys(_ParaGRPOKeys):
    """A recipe's ``trainer`` section: every ``ParaGRPOConfig`` key with its type, default and
    help (``paravt.config.section_of``), checked and coerced when the recipe is read, as every
    other section is. ``ParaGRPOConfig`` itself is built from it where the run starts
    (``paravt.train.run.para_config``): HF's ``TrainingArguments`` sets up the devices and the
    process group as it is built, and a memory plan (``paravt train --plan``) reads the keys on
    a machine without the recipe's GPUs. ``output_dir``, ``engine`` and ``rewards`` are the
    recipe's top-level sections; ``save_only_model`` is off by default (a checkpoint resumes)."""


#: GRPOConfig options TRL reads only in the rollout that ``ParaGRPOTrainer`` replaces and that
#: paravt cannot honour: ``key -> (the value that means "not used", why and the fix)``. The
#: override honours the others it bypasses (``mask_truncated_completions``,
#: ``pad_to_multiple_of``, ...: tests/train/test_trl_contract.py lists them all).
REFUSED: dict[str, tuple[object, str]] = {
    "multi_objective_aggregation": (
        "sum_then_normalize",
        "paravt composes its reward terms into one reward (paravt.rewards.compose) and normalises "
        "it per group, which is sum_then_normalize; drop the key",
    ),
    "reward_weights": (
        None,
        "paravt weighs its reward terms in the rewards section (rewards.format_weight and the "
        "other constants), not per TRL reward function; drop the key",
    ),
    "log_multimodal": (
        False,
        "paravt's completions table holds the episodes' text only (an episode's frames are "
        "drawn by paravt infer --sheet / eval --sheets); set it to false",
    ),
    "chat_template_kwargs": (
        None,
        "the episode engine renders every turn with the model's own chat template and passes "
        "no extra variables to it; drop the key",
    ),
}


def refused_option(cfg: GRPOConfig) -> str | None:
    """The one-line refusal of the first ``REFUSED`` option ``cfg`` sets, or None."""
    for key, (unused, why) in REFUSED.items():
        value = getattr(cfg, key)
        if value != unused and not (unused is None and value == {}):
            return f"trainer.{key}={value!r}: {why}"
    return None


def staleness_problem(cfg: ParaGRPOConfig) -> str | None:
    """Why ``max_staleness`` cannot run with this config (one line), or None."""
    k = int(cfg.max_staleness)
    if k < 0:
        return f"trainer.max_staleness={k}: use 0 (synchronous) or a positive number of steps"
    if cfg.producer not in ("thread", "process"):
        return f"trainer.producer={cfg.producer!r}: use 'thread' or 'process'"
    if k == 0:
        return None
    if not (cfg.use_vllm and cfg.vllm_mode == "server"):
        return (
            f"trainer.max_staleness={k} needs server mode (use_vllm=true, vllm_mode=server): "
            "rollouts for later steps run on a vLLM server while the trainers learn; in-process "
            "samplers (the policy itself, colocated vLLM) hold the weights being trained, so "
            "they cannot sample while the learner updates them. Set max_staleness=0"
        )
    spg = cfg.steps_per_generation or cfg.gradient_accumulation_steps
    if spg != cfg.gradient_accumulation_steps or cfg.num_iterations != 1:
        return (
            f"trainer.max_staleness={k} counts staleness in optimizer steps and needs one "
            "rollout per optimizer step: leave steps_per_generation at gradient_accumulation_"
            f"steps ({cfg.gradient_accumulation_steps}) and num_iterations at 1"
        )
    if not cfg.vllm_importance_sampling_correction or not str(
        cfg.vllm_importance_sampling_mode
    ).startswith("token_"):
        return (
            f"trainer.max_staleness={k} trains with the decoupled loss, whose behaviour-policy "
            "weight is TRL's per-token importance-sampling correction: set "
            "vllm_importance_sampling_correction=true and vllm_importance_sampling_mode="
            "token_truncate"
        )
    return None


def request_hold_s(cfg: ParaGRPOConfig) -> float:
    """How long one sampling request can be held: every attempt of it, and an outage of the
    servers on top (``vllm_outage_budget_s``)."""
    attempts = int(cfg.vllm_server_retries) + 1
    return attempts * float(cfg.vllm_server_request_timeout_s) + float(cfg.vllm_outage_budget_s)
