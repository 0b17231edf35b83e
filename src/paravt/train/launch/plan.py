"""The per-GPU memory plan of a training run, computed before any weight loads.

Why: the paper recipe launched as plain DDP needs ~105 GB a GPU for Qwen3-VL-8B before a single
activation (bf16 weights, gradients, DDP's gradient buckets, AdamW's two states and TRL's
reference model, 2 bytes a parameter each, the states 4), and finds out by running out of memory
after the model has loaded. ``paravt train --plan`` reads the model's ``config.json`` (the
parameters are counted on the meta device: no weight is read), the recipe and the launch (world
size, strategy) and prints what each GPU holds, item by item with its formula, and refuses a plan
that cannot fit with one line naming the fix.

Everything below ``model_shape`` is pure arithmetic over dataclasses. Sizes are decimal GB
(1 GB = 10^9 bytes), as GPU memory is quoted; ``P`` is the parameter count, ``N`` the world size.

What each strategy holds (per GPU, mixed precision = ``trainer.bf16``):

- ``ddp``: the model as ``paravt train`` loads it (bf16: 2 bytes a parameter, and no fp32 master
  copy, so an update smaller than bf16's resolution of the weight rounds away), gradients in the
  same dtype, DDP's gradient buckets (another copy; not with one process), AdamW's ``exp_avg`` and
  ``exp_avg_sq`` in the parameter dtype, and TRL's reference model, whole.
- ``zero2`` / ``zero3``: DeepSpeed's mixed-precision accounting (the ZeRO paper's 2 + 2 + 12
  bytes a parameter: bf16 weights, bf16 gradients, fp32 master + two fp32 Adam states), ZeRO-2
  sharding the gradients and the 12, ZeRO-3 all of it. TRL builds the reference model with ZeRO
  stage 0 (whole, bf16) under ZeRO-2 and shards it under ZeRO-3.
- ``fsdp2``: accelerate upcasts the trainable parameters to fp32 before ``fully_shard`` (they are
  the master copy; forwards gather bf16), so the shards hold 4 + 4 + 8 bytes a parameter / N; the
  reference model is sharded in bf16.

The rollout and the loss forward never run at once, so the peak is the resident states plus the
larger of the two. Rollout: ZeRO-3 with ``ds3_gather_for_generation`` gathers the whole bf16 model
on every GPU; FSDP2 and ZeRO-3 without it gather one unit at a time (two with prefetch). The KV
cache holds every episode of the rank's rollout at its longest context (the batched ``generate``
pads to it): ``rollout episodes × context × 2 (K, V) × layers × kv heads × head dim × 2 bytes``;
the sub-agents of a round (``evidence: subagent``) are one more batch of shorter contexts.
Loss: one micro-batch (``per_device_train_batch_size`` rows) of the longest context, with the
activation formulas written next to each line (estimates, not measurements). The LM head is TRL
1.16's fused one (``add_fused_lm_head``: ``[4096, 32768]`` tiles, no logits tensor; paravt's TRL
range is 1.16 only): the completion's hidden states and their fp32 gradient, one tile and the
head's fp32 gradient. ZeRO-3 also holds its live parameters and buckets (``zero3_items``), read
from the DeepSpeed config, and every rank a CUDA/NCCL allowance.

Colocated vLLM starts at ``vllm_max_model_length`` = the longest context (the frame and turn
budget), and a share whose KV cache cannot hold one episode does not fit (``kv_refusal``). The
NCCL weight push (server mode, ``vllm_weight_push: nccl``) counts rank 0's peak: its gathered
bucket and serving-dtype copy plus vLLM's two packed broadcast buffers.

With vLLM (``trainer.use_vllm``) the rollout is vLLM's: colocated, its
``vllm_gpu_memory_utilization`` share of each GPU is held all run (only while rolling out with
sleep mode) and must hold its bf16 weights (``P × 2 / vllm_tensor_parallel_size``); in server
mode only the trainer side counts (the server's GPUs are others): the unit the weight push
gathers at a time under ZeRO-3 / FSDP2. The step-time estimate is ``step_time.py``'s.

The longest context comes from the recipe's caps: K frames (the largest of ``gating_choices``, or
``engine.frames``) × image tokens a frame at the overview's ``max_pixels``, plus the prompt text,
plus every turn at its token budget and every tool turn at ``max_parallel`` calls (window frames ×
tokens a frame at the crop budget, or a sub-agent summary at ``subagent_max_tokens``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from paravt.errors import ConfigError
from paravt.train.layout import episodes_per_step, layout_problem

__all__ = ["fix_for", "format_plan", "plan_for_command"]

GB = 1e9

STRATEGIES = ("ddp", "fsdp2", "zero2", "zero3")

#: prompt text of an episode in tokens: the packaged system prompt with the crop_video schema
#: (~1,140 tokens on Qwen3-VL's tokenizer) and a question with its options; an allowance, not a count
PROMPT_TEXT_TOKENS = 1536
#: text around each frame: ``<|vision_start|>``, ``<|vision_end|>`` and a ``<t seconds>`` stamp
FRAME_TEXT_TOKENS = 8
#: text of one tool response besides its frames or summary (wrappers, the window's times)
CALL_TEXT_TOKENS = 32
#: a sub-agent's prompt text besides its window frames (its instruction and the question)
SUBAGENT_TEXT_TOKENS = 512
#: models of this many parameters and more are warned about under plain DDP at train start
DDP_WARN_PARAMS = 7e9
#: TRL 1.16's ``GRPOConfig.vllm_gpu_memory_utilization`` default (the test checks it against TRL)
TRL_VLLM_GPU_MEMORY_UTILIZATION = 0.3
#: TRL 1.16's fused LM head (``trl.trainer.utils.add_fused_lm_head``): log-probs through
#: ``[TRL_TOKEN_CHUNK, TRL_VOCAB_CHUNK]`` projection tiles, never the whole logits; the
#: backward accumulates the head's gradient in fp32 (the test checks both against TRL)
TRL_TOKEN_CHUNK = 4096
TRL_VOCAB_CHUNK = 32768
#: DeepSpeed's ZeRO-3 defaults where the config does not set them: parameters gathered at once
#: (``stage3_max_live_parameters``), the gradient reduce bucket (``reduce_bucket_size``) and the
#: prefetch bucket (``stage3_prefetch_bucket_size``), in elements
DS_MAX_LIVE_PARAMETERS = 1e9
DS_REDUCE_BUCKET = 5e8
DS_PREFETCH_BUCKET = 5e7
#: CUDA context, NCCL communicators and allocator slack a training process holds besides its
#: tensors: an allowance, not a count
CUDA_NCCL_ALLOWANCE = 1.0e9
#: vLLM's packed NCCL broadcast (``vllm.distributed.weight_transfer.packed_tensor``): buffers
#: of 1 GiB, double-buffered; a buffer is flushed once past the size, so it holds up to
#: 1 GiB + one tensor
VLLM_PACKED_BUFFER = 1024**3
VLLM_PACKED_BUFFERS = 2


@dataclass(frozen=True)
class ModelShape:
    """What the plan needs of a model, read from its config (``model_shape``)."""

    name: str
    params: int
    trainable: int
    layers: int
    hidden: int
    intermediate: int
    kv_heads: int
    head_dim: int
    vocab: int
    #: pixels a side one image token covers (patch size × spatial merge)
    factor: int
    vision_hidden: int
    vision_depth: int
    #: parameters of the largest unit FSDP / ZeRO-3 gathers at once (a decoder layer, embeddings)
    largest_unit: int


@dataclass(frozen=True)
class ContextBudget:
    """The recipe's caps that bound an episode's token stream (``context_budget``)."""

    frames: int
    overview_tokens_per_frame: int
    window_tokens_per_frame: int
    max_turns: int
    max_parallel: int
    window_frames: int
    max_new_tokens: int
    forced_tokens: int
    evidence: str
    subagent_max_tokens: int
    prompt_text: int = PROMPT_TEXT_TOKENS

    @property
    def tool_turn_tokens(self) -> int:
        """One tool turn at ``max_parallel`` calls."""
        if self.evidence == "subagent":
            per_call = self.subagent_max_tokens
        else:
            per_call = self.window_frames * (self.window_tokens_per_frame + FRAME_TEXT_TOKENS)
        return self.max_parallel * (per_call + CALL_TEXT_TOKENS)

    @property
    def prompt_tokens(self) -> int:
        return self.prompt_text + self.frames * (self.overview_tokens_per_frame + FRAME_TEXT_TOKENS)

    @property
    def completion_tokens(self) -> int:
        """Generated turns (``max_turns`` at ``max_new_tokens`` and the forced answer) and the
        ``max_turns`` tool turns between them: TRL's ``logits_to_keep``."""
        generated = self.max_turns * self.max_new_tokens + self.forced_tokens
        return generated + self.max_turns * self.tool_turn_tokens

    @property
    def context_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def subagent_tokens(self) -> int:
        """One sub-agent's context: its window frames, its text and its summary (0 without)."""
        if self.evidence != "subagent":
            return 0
        frames = self.window_frames * (self.window_tokens_per_frame + FRAME_TEXT_TOKENS)
        return SUBAGENT_TEXT_TOKENS + frames + self.subagent_max_tokens

    def formula(self) -> str:
        calls = (
            f"{self.max_parallel} × {self.subagent_max_tokens} summary"
            if self.evidence == "subagent"
            else f"{self.max_parallel} × {self.window_frames} frames × "
            f"({self.window_tokens_per_frame} + {FRAME_TEXT_TOKENS})"
        )
        return (
            f"{self.prompt_text} text + {self.frames} frames × ({self.overview_tokens_per_frame} "
            f"+ {FRAME_TEXT_TOKENS}) + {self.max_turns} turns × {self.max_new_tokens} + "
            f"{self.forced_tokens} forced + {self.max_turns} tool turns × ({calls} + "
            f"{self.max_parallel} × {CALL_TEXT_TOKENS}) = {self.context_tokens:,} tokens"
        )


@dataclass(frozen=True)
class Launch:
    """How the run is launched and batched (``launch_of``)."""

    strategy: str
    world_size: int
    bf16: bool
    #: the KL's weight, TRL's β or the KL reward's (non-zero: the reference model is built)
    beta: float
    #: rows a loss forward takes (``per_device_train_batch_size``)
    micro_batch: int
    #: episodes one rank runs in a rollout (``per_device_train_batch_size × steps_per_generation``)
    rollout_batch: int
    gradient_checkpointing: bool
    gather_for_generation: bool = True
    subagent_in_loss: bool = False
    #: optimizer micro-batches a step (``gradient_accumulation_steps``)
    accumulation: int = 1
    #: rollouts a generation is reused for (TRL's ``num_iterations``)
    num_iterations: int = 1
    use_vllm: bool = False
    #: ``colocate`` (an engine in every training process) or ``server`` (its own GPUs)
    vllm_mode: str = "colocate"
    vllm_gpu_memory_utilization: float = TRL_VLLM_GPU_MEMORY_UTILIZATION
    vllm_tensor_parallel_size: int = 1
    #: ``vllm_enable_sleep_mode``: the colocated engine frees its share while the loss runs
    vllm_sleep: bool = False
    vllm_importance_sampling: bool = True
    #: the KL reward (rewards.kl_in_reward) reads the old policy's log-probs: one more forward
    #: of the generated rows when the sampler gives none
    old_for_kl: bool = False
    #: ZeRO-3's sizes in elements (the DeepSpeed config's; its defaults where unset; None:
    #: ``"auto"``, which transformers resolves from the hidden size)
    zero3_live_params: float | None = DS_MAX_LIVE_PARAMETERS
    zero3_reduce_bucket: float | None = DS_REDUCE_BUCKET
    zero3_prefetch_bucket: float | None = DS_PREFETCH_BUCKET
    #: server mode: ``folder`` or ``nccl`` (``trainer.vllm_weight_push``) and its bucket bytes
    vllm_weight_push: str = "folder"
    push_bucket_bytes: float = 512 * 2**20
    #: the recipe's declared layout (``paravt.train.layout.Layout.describe``), "" if none
    layout: str = ""
    #: episodes a step over every rank (TRL's ``generation_batch_size``)
    episodes: int = 0

    @property
    def colocated_vllm(self) -> bool:
        return self.use_vllm and self.vllm_mode == "colocate"

    @property
    def push_bucket_mb(self) -> float:
        return self.push_bucket_bytes / 2**20


@dataclass(frozen=True)
class Item:
    name: str
    bytes: float
    formula: str
    #: ``state`` (held all step), ``rollout`` or ``loss`` (one phase at a time)
    phase: str = "state"


@dataclass
class MemoryPlan:
    shape: ModelShape
    launch: Launch
    context: ContextBudget
    gpu_bytes: float
    items: list[Item] = field(default_factory=list)

    def phase_bytes(self, phase: str) -> float:
        return sum(i.bytes for i in self.items if i.phase == phase)

    @property
    def total(self) -> float:
        """Peak per GPU: the states plus the larger of the rollout and the loss forward."""
        return self.phase_bytes("state") + max(
            self.phase_bytes("rollout"), self.phase_bytes("loss")
        )

    @property
    def vllm_share(self) -> float:
        """Bytes a colocated vLLM engine may take of each GPU (0 without one)."""
        if not self.launch.colocated_vllm:
            return 0.0
        return self.launch.vllm_gpu_memory_utilization * self.gpu_bytes

    @property
    def vllm_weights(self) -> float:
        """Bytes of the colocated engine's bf16 weights on one GPU (its tensor-parallel shard)."""
        if not self.launch.colocated_vllm:
            return 0.0
        return self.shape.params * 2 / max(1, self.launch.vllm_tensor_parallel_size)

    @property
    def vllm_kv_tokens(self) -> int:
        """Tokens of KV cache a colocated engine's share holds after its weights (at most:
        vLLM takes its activations out of the same share); 0 without one."""
        if not self.launch.colocated_vllm:
            return 0
        tp = max(1, self.launch.vllm_tensor_parallel_size)
        per_token = kv_bytes_per_token(self.shape) / tp  # tensor parallel splits the KV heads
        return int(max(0.0, self.vllm_share - self.vllm_weights) // per_token)

    @property
    def vllm_max_model_length(self) -> int:
        """``vllm_max_model_length`` a colocated engine is started with: the recipe's longest
        episode (``ContextBudget.context_tokens``, the frame and turn budget), not the model's
        own context (Qwen3-VL's 262,144 tokens: 38.7 GB of KV cache at 8B for one request)."""
        return self.context.context_tokens

    @property
    def fits(self) -> bool:
        """The peak fits the GPU, and a colocated engine's share holds its own weights and the
        KV cache of one episode at ``vllm_max_model_length`` (vLLM refuses to start otherwise)."""
        if self.total > self.gpu_bytes:
            return False
        if not self.launch.colocated_vllm:
            return True
        return (
            self.vllm_weights < self.vllm_share
            and self.vllm_kv_tokens >= self.vllm_max_model_length
        )

    def item(self, name: str) -> Item:
        for it in self.items:
            if it.name == name:
                return it
        raise KeyError(name)

    def to_dict(self) -> dict:
        colocated = (
            {
                "vllm_max_model_length": self.vllm_max_model_length,
                "vllm_kv_tokens": self.vllm_kv_tokens,
            }
            if self.launch.colocated_vllm
            else {}
        )
        return {
            **colocated,
            "model": self.shape.name,
            "params": self.shape.params,
            "strategy": self.launch.strategy,
            "world_size": self.launch.world_size,
            "layout": self.launch.layout or None,
            "episodes_per_step": self.launch.episodes,
            "vllm": self.launch.vllm_mode if self.launch.use_vllm else None,
            "context_tokens": self.context.context_tokens,
            "items": [
                {
                    "name": i.name,
                    "phase": i.phase,
                    "gb": round(i.bytes / GB, 3),
                    "formula": i.formula,
                }
                for i in self.items
            ],
            "state_gb": round(self.phase_bytes("state") / GB, 3),
            "rollout_gb": round(self.phase_bytes("rollout") / GB, 3),
            "loss_gb": round(self.phase_bytes("loss") / GB, 3),
            "total_gb": round(self.total / GB, 3),
            "gpu_gb": round(self.gpu_bytes / GB, 3),
            "fits": self.fits,
            "fix": fix_for(self),
        }


def tokens_per_frame(factor: int, min_pixels: int, max_pixels: int) -> int:
    """Image tokens of one frame at most: the size rule (``kernels.smart_resize``) keeps the area
    within ``max_pixels`` (raised to ``min_pixels`` and to one token) on a grid of
    ``factor × factor`` cells."""
    return max(1, max(min_pixels, max_pixels) // (factor * factor))


def state_items(shape: ModelShape, launch: Launch) -> list[Item]:
    """Weights, gradients, optimizer states (fp32 master where the strategy keeps one), DDP
    buckets and the reference model, per GPU."""
    P, N = shape.params, max(1, launch.world_size)
    T = shape.trainable
    mixed = launch.bf16
    p = 2 if mixed else 4  # bytes of a parameter as loaded
    s = launch.strategy
    out: list[Item] = []
    if s == "ddp":
        out.append(Item("weights", P * p, f"P × {p}"))
        out.append(Item("gradients", T * p, f"P_trainable × {p}"))
        if N > 1:
            out.append(Item("ddp buckets", T * p, f"P_trainable × {p} (a copy of the gradients)"))
        out.append(
            Item("optimizer (AdamW)", T * 2 * p, f"P_trainable × 2 states × {p} (param dtype)")
        )
        out.append(
            Item(
                "fp32 master",
                0.0,
                "none: bf16 weights take the update directly" if mixed else "none: fp32 weights",
            )
        )
        ref_bytes, ref_f = P * p, f"P × {p} (whole, the model's dtype)"
    elif s in ("zero2", "zero3"):
        shard_w = s == "zero3"
        out.append(
            Item("weights", P * p / (N if shard_w else 1), f"P × {p}" + (" / N" if shard_w else ""))
        )
        out.append(Item("gradients", T * p / N, f"P_trainable × {p} / N"))
        out.append(Item("optimizer (AdamW)", T * 8 / N, "P_trainable × 2 states × 4 / N"))
        out.append(
            Item(
                "fp32 master",
                T * 4 / N if mixed else 0.0,
                "P_trainable × 4 / N" if mixed else "none: fp32 weights",
            )
        )
        if s == "zero3":
            ref_bytes, ref_f = P * p / N, f"P × {p} / N (sharded)"
        else:
            ref_bytes, ref_f = P * p, f"P × {p} (ZeRO stage 0: whole)"
    elif s == "fsdp2":
        out.append(Item("weights", P * 4 / N, "P × 4 / N (fp32 shards: the master copy)"))
        out.append(Item("gradients", T * 4 / N, "P_trainable × 4 / N"))
        out.append(Item("optimizer (AdamW)", T * 8 / N, "P_trainable × 2 states × 4 / N"))
        out.append(Item("fp32 master", 0.0, "the fp32 weight shards themselves"))
        ref_bytes, ref_f = P * p / N, f"P × {p} / N (sharded)"
    else:
        raise ConfigError(f"strategy {s!r}: choose one of {', '.join(STRATEGIES)}")
    if launch.beta == 0.0:
        out.append(Item("reference model", 0.0, "none: beta = 0 (TRL builds no reference)"))
    else:
        out.append(Item("reference model", ref_bytes, ref_f))
    if s == "zero3":
        out += zero3_items(shape, launch)
    return out


def zero3_items(shape: ModelShape, launch: Launch) -> list[Item]:
    """What ZeRO-3 holds besides its shards: the parameters gathered at once (bounded by
    ``stage3_max_live_parameters``) and its buckets (the gradient reduce bucket, the prefetch
    bucket), in the parameters' dtype; plus the CUDA/NCCL allowance every rank pays. Held in
    the rollout and the loss alike, so counted with the states."""
    p = 2 if launch.bf16 else 4
    h2 = shape.hidden * shape.hidden
    live = launch.zero3_live_params
    reduce = launch.zero3_reduce_bucket if launch.zero3_reduce_bucket is not None else h2
    prefetch = (
        launch.zero3_prefetch_bucket if launch.zero3_prefetch_bucket is not None else 0.9 * h2
    )
    live_n = min(live if live is not None else DS_MAX_LIVE_PARAMETERS, shape.params)
    return [
        Item(
            "zero3: live parameters",
            live_n * p,
            f"min(stage3_max_live_parameters {live_n:,.0f}, P) × {p}",
        ),
        Item(
            "zero3: buckets + CUDA/NCCL",
            (reduce + prefetch) * p + CUDA_NCCL_ALLOWANCE,
            f"(reduce_bucket_size {reduce:,.0f} + stage3_prefetch_bucket_size {prefetch:,.0f})"
            f" × {p} + {CUDA_NCCL_ALLOWANCE / GB:.1f} GB CUDA context and NCCL (an allowance)",
        ),
    ]


def kv_bytes_per_token(shape: ModelShape, dtype_bytes: int = 2) -> int:
    return 2 * shape.layers * shape.kv_heads * shape.head_dim * dtype_bytes


def vllm_items(shape: ModelShape, launch: Launch, gpu_bytes: float) -> list[Item]:
    """What vLLM takes of a trainer GPU. Colocated: its ``vllm_gpu_memory_utilization`` share of
    every GPU (vLLM reserves the share at start for its weights, activations and KV cache, and
    keeps it all run; with sleep mode it frees it while the loss runs). Server mode: nothing, the
    server's GPUs are others; the trainer only gathers a unit at a time to push the weights."""
    out: list[Item] = []
    if launch.colocated_vllm:
        u, tp = launch.vllm_gpu_memory_utilization, max(1, launch.vllm_tensor_parallel_size)
        share = u * gpu_bytes
        weights = shape.params * 2 / tp
        kv = max(0.0, share - weights) / (kv_bytes_per_token(shape) / tp)
        out.append(
            Item(
                "vllm engine (colocate)",
                share,
                f"vllm_gpu_memory_utilization {u:g} × {gpu_bytes / GB:.0f} GB: its weights "
                f"P × 2 / tp {tp} = {weights / GB:.2f} GB, activations and KV cache the rest "
                f"(at most {kv:,.0f} tokens)"
                + ("; freed while the loss runs (sleep mode)" if launch.vllm_sleep else ""),
                "rollout" if launch.vllm_sleep else "state",
            )
        )
    else:
        out.append(Item("vllm server", 0.0, "on its own GPUs: not counted here"))
    if launch.use_vllm and launch.vllm_mode == "server" and launch.vllm_weight_push == "nccl":
        largest = shape.largest_unit * 2
        bucket = max(launch.push_bucket_bytes, largest)
        packed = VLLM_PACKED_BUFFERS * (VLLM_PACKED_BUFFER + largest)
        out.append(
            Item(
                "rollout: NCCL push (rank 0)",
                bucket * 2 + packed,
                f"max(bucket {launch.push_bucket_mb:g} MB, largest unit × 2) × 2 (gathered + "
                f"its serving-dtype copy) + {VLLM_PACKED_BUFFERS} packed buffers × (1 GiB + "
                "largest unit × 2): rank 0, which sends",
                "rollout",
            )
        )
        return out
    if launch.strategy in ("zero3", "fsdp2"):
        out.append(
            Item(
                "rollout: weight push",
                shape.largest_unit * 2,
                "largest unit × 2 bytes (the push gathers the shards a unit at a time)",
                "rollout",
            )
        )
    return out


def rollout_items(shape: ModelShape, launch: Launch, ctx: ContextBudget) -> list[Item]:
    """Gathered weights, the KV cache of the rank's episodes and the prefill's largest layer."""
    p = 2 if launch.bf16 or launch.strategy in ("zero3", "fsdp2", "zero2") else 4
    out: list[Item] = []
    gathered = launch.strategy == "zero3" and launch.gather_for_generation
    if gathered:
        out.append(
            Item(
                "rollout: gathered weights",
                shape.params * 2,
                "P × 2 (ds3_gather_for_generation: the whole bf16 model)",
                "rollout",
            )
        )
    elif launch.strategy in ("zero3", "fsdp2"):
        out.append(
            Item(
                "rollout: gathered units",
                shape.largest_unit * 2 * 2,
                "largest unit × 2 bytes × 2 (one in use, one prefetched)",
                "rollout",
            )
        )
    kv = kv_bytes_per_token(shape, p)
    main = launch.rollout_batch * ctx.context_tokens * kv
    sub = launch.rollout_batch * ctx.max_parallel * ctx.subagent_tokens * kv
    kv_f = (
        f"{launch.rollout_batch} episodes × {ctx.context_tokens:,} tokens × 2 × {shape.layers} "
        f"layers × {shape.kv_heads} kv heads × {shape.head_dim} × {p}"
    )
    if sub > main:
        kv_f = (
            f"{launch.rollout_batch} × {ctx.max_parallel} sub-agents × {ctx.subagent_tokens:,} "
            f"tokens × 2 × {shape.layers} × {shape.kv_heads} × {shape.head_dim} × {p}"
        )
    out.append(Item("rollout: KV cache", max(main, sub), kv_f, "rollout"))
    rows_tokens = max(
        launch.rollout_batch * ctx.context_tokens,
        launch.rollout_batch * ctx.max_parallel * ctx.subagent_tokens,
    )
    prefill = rows_tokens * (3 * shape.intermediate + 4 * shape.hidden) * p
    out.append(
        Item(
            "rollout: prefill",
            prefill,
            f"{rows_tokens:,} tokens × (3 × {shape.intermediate} + 4 × {shape.hidden}) × {p} "
            "(one layer's MLP and attention tensors)",
            "rollout",
        )
    )
    return out


def loss_items(shape: ModelShape, launch: Launch, ctx: ContextBudget) -> list[Item]:
    """Activations of one loss micro-batch (estimates: the formula is the claim)."""
    p = 2 if launch.bf16 else 4
    B, L, Tc = rows_a_forward(launch, ctx), ctx.context_tokens, ctx.completion_tokens
    h, i = shape.hidden, shape.intermediate
    layer = 8 * h + 3 * i  # elements a token one decoder layer keeps for its backward
    if launch.gradient_checkpointing:
        acts = B * L * (shape.layers * h + layer) * p
        acts_f = (
            f"{B} rows × {L:,} tokens × ({shape.layers} layers × {h} + 8 × {h} + 3 × {i}) × {p}"
        )
        acts_f += " (checkpointed inputs + one layer recomputed)"
    else:
        acts = B * L * shape.layers * layer * p
        acts_f = f"{B} rows × {L:,} tokens × {shape.layers} layers × (8 × {h} + 3 × {i}) × {p}"
    # TRL 1.16's fused LM head: the completion tokens' hidden states (a copy, and their fp32
    # gradient), one [4096, 32768] projection tile, and the head's fp32 gradient accumulator
    n = B * Tc
    tile = min(n, TRL_TOKEN_CHUNK) * TRL_VOCAB_CHUNK * p
    head = n * h * (p + 4) + tile + shape.vocab * h * 4
    head_f = (
        f"{B} rows × {Tc:,} completion tokens × {h} × ({p} hidden + 4 fp32 gradient) + "
        f"min(tokens, {TRL_TOKEN_CHUNK}) × {TRL_VOCAB_CHUNK} × {p} tile + {shape.vocab:,} vocab "
        f"× {h} × 4 fp32 head gradient (TRL 1.16's fused head: no logits)"
    )
    patches = ctx.frames * ctx.overview_tokens_per_frame * 4
    if ctx.evidence == "frames":
        patches += (
            ctx.max_turns * ctx.max_parallel * ctx.window_frames * ctx.window_tokens_per_frame * 4
        )
    vis_layers = 1 if launch.gradient_checkpointing else shape.vision_depth
    vision = B * patches * shape.vision_hidden * (vis_layers + 1) * 8 * p
    vision_f = (
        f"{B} rows × {patches:,} patches × {shape.vision_hidden} × "
        f"{vis_layers + 1} layers × 8 × {p}"
    )
    return [
        Item("loss: decoder activations", acts, acts_f, "loss"),
        Item("loss: LM head (fused)", head, head_f, "loss"),
        Item("loss: vision tower", vision, vision_f, "loss"),
    ]


def rows_a_forward(launch: Launch, ctx: ContextBudget) -> int:
    """Rows of one loss forward: the micro-batch's episodes, and with ``subagent_in_loss`` their
    sub-agents too (TRL splits all rows evenly over the accumulation steps and pads a forward to
    its longest row, so each counts at the longest context)."""
    if launch.subagent_in_loss and ctx.evidence == "subagent":
        return launch.micro_batch * (1 + ctx.max_turns * ctx.max_parallel)
    return launch.micro_batch


def memory_plan(
    shape: ModelShape, launch: Launch, ctx: ContextBudget, gpu_gb: float = 80.0
) -> MemoryPlan:
    if launch.strategy not in STRATEGIES:
        raise ConfigError(f"strategy {launch.strategy!r}: choose one of {', '.join(STRATEGIES)}")
    plan = MemoryPlan(shape, launch, ctx, gpu_gb * GB)
    rollout = (
        vllm_items(shape, launch, plan.gpu_bytes)
        if launch.use_vllm
        else rollout_items(shape, launch, ctx)
    )
    plan.items = state_items(shape, launch) + rollout + loss_items(shape, launch, ctx)
    return plan


def fix_for(plan: MemoryPlan) -> str | None:
    """The one change most likely to make ``plan`` fit (None when it fits)."""
    if plan.fits:
        return None
    launch, gpu = plan.launch, plan.gpu_bytes
    state = plan.phase_bytes("state")
    rollout, loss = plan.phase_bytes("rollout"), plan.phase_bytes("loss")
    if launch.strategy in ("ddp", "zero2") and launch.world_size > 1 and state > gpu / 2:
        return (
            "shard the model: launch with DeepSpeed ZeRO-3 (--set trainer.deepspeed=ds_zero3.json) "
            "or FSDP2 (accelerate launch --config_file fsdp.yaml), docs/train/MULTI_GPU.md"
        )
    if launch.colocated_vllm and plan.vllm_weights >= plan.vllm_share:
        return (
            f"vLLM's share ({launch.vllm_gpu_memory_utilization:g} × {gpu / GB:.0f} GB) cannot "
            f"hold its {plan.vllm_weights / GB:.1f} GB of weights: raise "
            "trainer.vllm_gpu_memory_utilization or trainer.vllm_tensor_parallel_size, or use "
            "vllm_mode=server"
        )
    if launch.colocated_vllm and plan.vllm_kv_tokens < plan.vllm_max_model_length:
        return kv_refusal(plan)
    if state > gpu:
        return (
            f"the model's states alone need {state / GB:.1f} GB a GPU: use more GPUs "
            "(--world-size) with ZeRO-3 / FSDP2, or a smaller model"
        )
    if loss >= rollout and launch.micro_batch > 1:
        return (
            f"one episode a loss forward: --set trainer.per_device_train_batch_size=1 --set "
            f"trainer.gradient_accumulation_steps={launch.rollout_batch} (the rollout keeps "
            f"{launch.rollout_batch} episodes a rank)"
        )
    if (
        rollout > loss
        and launch.strategy == "zero3"
        and launch.gather_for_generation
        and not launch.use_vllm
        and state + rollout - plan.item("rollout: gathered weights").bytes <= gpu
    ):
        return "--set trainer.ds3_gather_for_generation=false (slower, lock-stepped generation)"
    return (
        "lower the frame and token budgets (trainer.gating_choices / engine.frames, "
        "engine.crop.max_frames, engine.max_pixels, engine.max_new_tokens) or the episodes a "
        "rank (per_device_train_batch_size × steps_per_generation)"
    )


def kv_refusal(plan: MemoryPlan) -> str:
    """One line: the colocated share cannot hold one episode's KV cache."""
    la, gpu = plan.launch, plan.gpu_bytes
    per_token = kv_bytes_per_token(plan.shape) / max(1, la.vllm_tensor_parallel_size)
    need = plan.vllm_max_model_length * per_token
    return (
        f"vLLM's colocated share ({la.vllm_gpu_memory_utilization:g} × {gpu / GB:.0f} GB, "
        f"{plan.vllm_weights / GB:.1f} GB of it weights) holds {plan.vllm_kv_tokens:,} tokens "
        f"of KV cache, and one episode needs {plan.vllm_max_model_length:,} "
        f"({need / GB:.1f} GB): raise trainer.vllm_gpu_memory_utilization, lower the frame and "
        "turn budgets, or use vllm_mode=server"
    )


def format_plan(plan: MemoryPlan) -> str:
    """The plan as a text table (what ``paravt train --plan`` prints)."""
    s, la, ctx = plan.shape, plan.launch, plan.context
    lines = [
        f"model {s.name}: {s.params / 1e9:.3f} B parameters ({s.params:,}); strategy "
        f"{la.strategy}, {la.world_size} GPU(s), {'bf16' if la.bf16 else 'fp32'}",
        *(
            [
                f"recipe layout: {la.layout}; {la.episodes} episodes a step at {la.world_size} rank(s)"
            ]
            if la.layout
            else []
        ),
        f"longest context: {ctx.formula()}",
        f"rollout: {la.rollout_batch} episodes a rank"
        + (f", sampled by vLLM ({la.vllm_mode})" if la.use_vllm else ", sampled by HF generate")
        + f"; loss: {rows_a_forward(la, ctx)} row(s) a forward",
    ]
    if la.colocated_vllm:
        lines.append(
            f"vllm_max_model_length {plan.vllm_max_model_length:,} (the longest context); the "
            f"share's KV cache holds {plan.vllm_kv_tokens:,} tokens"
        )
    lines += [
        "",
        f"{'per GPU':<28} {'GB':>8}  formula",
    ]
    for phase, title in (("state", None), ("rollout", "rollout"), ("loss", "loss")):
        if title:
            lines.append(f"{'':<28} {'':>8}  -- {title} (one phase at a time) --")
        for it in plan.items:
            if it.phase == phase:
                lines.append(f"{it.name:<28} {it.bytes / GB:>8.2f}  {it.formula}")
    lines += [
        "",
        f"{'states':<28} {plan.phase_bytes('state') / GB:>8.2f}",
        f"{'rollout':<28} {plan.phase_bytes('rollout') / GB:>8.2f}",
        f"{'loss micro-batch':<28} {plan.phase_bytes('loss') / GB:>8.2f}",
        f"{'peak (states + max)':<28} {plan.total / GB:>8.2f}  of {plan.gpu_bytes / GB:.0f} GB: "
        + ("fits" if plan.fits else "does NOT fit"),
    ]
    return "\n".join(lines)


# -- reading the recipe and the launch ---------------------------------------------------------


def context_budget(engine: Any, trainer: dict, factor: int) -> ContextBudget:
    """The longest episode the recipe allows (``engine``: a ``TrainEngineConfig``)."""
    gating = bool(trainer.get("frames_gating", True))
    choices = trainer.get("gating_choices") or [engine.frames]
    k = max(int(c) for c in choices) if gating else int(engine.frames)
    forced = max(engine.forced_tokens_mcq, engine.forced_tokens_tvg, engine.forced_tokens_oe)
    return ContextBudget(
        frames=k,
        overview_tokens_per_frame=tokens_per_frame(factor, engine.min_pixels, engine.max_pixels),
        window_tokens_per_frame=tokens_per_frame(
            factor, engine.crop.min_pixels, engine.crop.max_pixels
        ),
        max_turns=int(engine.max_turns),
        max_parallel=int(engine.max_parallel) if engine.mode == "parallel" else 1,
        window_frames=int(engine.crop.max_frames),
        max_new_tokens=int(engine.max_new_tokens),
        forced_tokens=int(min(forced, engine.max_new_tokens)),
        evidence=str(engine.evidence),
        subagent_max_tokens=int(min(engine.subagent_max_tokens, engine.max_new_tokens)),
    )


def _zero_stage(deepspeed: Any) -> int:
    ds = deepspeed
    if isinstance(ds, str):
        path = Path(ds)
        if not path.is_file():
            raise ConfigError(f"trainer.deepspeed={ds!r}: no such JSON file")
        ds = json.loads(path.read_text())
    return int(((ds or {}).get("zero_optimization") or {}).get("stage", 0))


def _read_accelerate(path: str | None) -> dict:
    if not path:
        return {}
    import yaml

    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"--accelerate-config {path}: no such file")
    return yaml.safe_load(p.read_text()) or {}


def strategy_of(trainer: dict, accelerate: dict | None = None) -> str:
    """``ddp``, ``fsdp2``, ``zero2`` or ``zero3`` from the trainer keys (``deepspeed``, ``fsdp``)
    or an accelerate config (``distributed_type``). FSDP version 1 counts as ``fsdp2`` (same
    shards); ZeRO-1 as ``zero2`` (it shards a little less: the plan is then optimistic)."""
    acc = accelerate or {}
    if trainer.get("deepspeed"):
        return "zero3" if _zero_stage(trainer["deepspeed"]) == 3 else "zero2"
    if trainer.get("fsdp") not in (None, False, "", "false"):
        return "fsdp2"
    kind = str(acc.get("distributed_type", "")).upper()
    if kind == "DEEPSPEED":
        stage = int((acc.get("deepspeed_config") or {}).get("zero_stage", 0))
        return "zero3" if stage == 3 else "zero2"
    if kind == "FSDP":
        return "fsdp2"
    return "ddp"


def world_size_of(
    flag: int | None, accelerate: dict | None, launcher_env: str | None, declared: int = 1
) -> int:
    """The flag, else the launcher's ``WORLD_SIZE`` (a fact it reports), else the accelerate
    config's ``num_processes``, else the recipe's ``layout.trainer_ranks`` (``declared``)."""
    if flag:
        return int(flag)
    if launcher_env and launcher_env.isdigit() and int(launcher_env) > 0:
        return int(launcher_env)
    acc = accelerate or {}
    if acc.get("num_processes"):
        return int(acc["num_processes"])
    return max(1, int(declared))


def launch_of(trainer: dict, strategy: str, world_size: int) -> Launch:
    """The launch as the trainer keys describe it (TRL's defaults where a key is absent)."""
    micro = int(trainer.get("per_device_train_batch_size", 8))
    accum = int(trainer.get("gradient_accumulation_steps", 1))
    spg = int(trainer.get("steps_per_generation") or accum)
    return Launch(
        strategy=strategy,
        world_size=world_size,
        bf16=bool(trainer.get("bf16", False)),
        beta=float(trainer.get("beta", 0.0)),
        micro_batch=micro,
        rollout_batch=micro * spg,
        gradient_checkpointing=bool(trainer.get("gradient_checkpointing", False)),
        gather_for_generation=bool(trainer.get("ds3_gather_for_generation", True)),
        subagent_in_loss=bool(trainer.get("subagent_in_loss", False)),
        accumulation=accum,
        num_iterations=int(trainer.get("num_iterations", 1)),
        use_vllm=bool(trainer.get("use_vllm", False)),
        vllm_mode=str(trainer.get("vllm_mode", "colocate")),
        vllm_gpu_memory_utilization=float(
            trainer.get("vllm_gpu_memory_utilization", TRL_VLLM_GPU_MEMORY_UTILIZATION)
        ),
        vllm_tensor_parallel_size=int(trainer.get("vllm_tensor_parallel_size", 1)),
        vllm_sleep=bool(trainer.get("vllm_enable_sleep_mode", False)),
        vllm_importance_sampling=bool(trainer.get("vllm_importance_sampling_correction", True)),
        **_zero3_sizes(trainer.get("deepspeed")),
        vllm_weight_push=str(trainer.get("vllm_weight_push", "folder")),
        push_bucket_bytes=float(trainer.get("vllm_push_bucket_mb", 512.0)) * 2**20,
    )


def _zero3_sizes(deepspeed: Any) -> dict:
    """ZeRO-3's live-parameter bound and buckets from a DeepSpeed config (a dict or a JSON
    file); DeepSpeed's defaults where unset, None where ``"auto"`` (resolved from the hidden
    size, as transformers does)."""
    ds = deepspeed
    if isinstance(ds, str) and Path(ds).is_file():
        ds = json.loads(Path(ds).read_text())
    zero = ((ds or {}).get("zero_optimization") or {}) if isinstance(ds, dict) else {}

    def read(key: str, default: float) -> float | None:
        value = zero.get(key, default)
        return None if value == "auto" else float(value)

    return {
        "zero3_live_params": read("stage3_max_live_parameters", DS_MAX_LIVE_PARAMETERS),
        "zero3_reduce_bucket": read("reduce_bucket_size", DS_REDUCE_BUCKET),
        "zero3_prefetch_bucket": read("stage3_prefetch_bucket_size", DS_PREFETCH_BUCKET),
    }


def shape_of_model(model: Any, name: str) -> ModelShape:
    """``ModelShape`` of a built model (on the meta device or real)."""
    cfg = model.config
    text = getattr(cfg, "text_config", cfg)
    vision = getattr(cfg, "vision_config", None)
    heads = int(text.num_attention_heads)
    head_dim = int(getattr(text, "head_dim", None) or text.hidden_size // heads)
    units = [sum(p.numel() for p in layer.parameters()) for layer in _decoder_layers(model)]
    for mod in (model.get_input_embeddings(), model.get_output_embeddings()):
        if mod is not None:
            units.append(sum(p.numel() for p in mod.parameters()))
    patch = int(getattr(vision, "patch_size", 14)) if vision is not None else 14
    merge = int(getattr(vision, "spatial_merge_size", 2)) if vision is not None else 2
    return ModelShape(
        name=name,
        params=sum(p.numel() for p in model.parameters()),
        trainable=sum(p.numel() for p in model.parameters() if p.requires_grad),
        layers=int(text.num_hidden_layers),
        hidden=int(text.hidden_size),
        intermediate=int(text.intermediate_size),
        kv_heads=int(getattr(text, "num_key_value_heads", None) or heads),
        head_dim=head_dim,
        vocab=int(text.vocab_size),
        factor=patch * merge,
        vision_hidden=int(getattr(vision, "hidden_size", 0)) if vision is not None else 0,
        vision_depth=int(getattr(vision, "depth", 0)) if vision is not None else 0,
        largest_unit=max(units) if units else 0,
    )


def _decoder_layers(model: Any) -> list:
    for name, mod in model.named_modules():
        if name.endswith("language_model.layers") or name == "model.layers":
            return list(mod)
    return []


def model_shape(spec: str) -> ModelShape:
    """Count a model's parameters without reading a weight: ``tiny:<arch>[:<preset>]`` is built
    in memory (small), a folder's ``config.json`` is instantiated on the meta device. A Hub id is
    refused: the plan runs offline (download the folder's config.json and point at it)."""
    import torch  # heavy: only a plan that is asked for loads it

    if spec.startswith("tiny:"):
        from paravt.models.tiny import build_tiny

        parts = spec.split(":")
        arch = parts[1] or "qwen3-vl"
        preset = parts[2] if len(parts) > 2 and parts[2] else "tiny"
        model, _ = build_tiny(arch, preset=preset)
        return shape_of_model(model, spec)
    folder = Path(spec)
    if not (folder / "config.json").is_file():
        raise ConfigError(
            f"model={spec!r}: the plan reads config.json from a local model folder; download "
            "the model's config.json into a folder and pass --set model=FOLDER"
        )
    from transformers import AutoConfig, AutoModelForImageTextToText

    config = AutoConfig.from_pretrained(str(folder))
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    return shape_of_model(model, folder.name)


def plan_for_command(
    cfg: Any,
    world_size: int | None = None,
    strategy: str | None = None,
    gpu_gb: float = 80.0,
    accelerate_config: str | None = None,
    launcher_world_size: str | None = None,
    shape: ModelShape | None = None,
) -> MemoryPlan:
    """The plan of a ``TrainCommandConfig`` under a launch (flags first, then the launcher's
    ``WORLD_SIZE``, then the accelerate config)."""
    trainer = cfg.trainer.given()  # the keys the recipe sets, typed (ParaGRPOKeys)
    acc = _read_accelerate(accelerate_config)
    if acc.get("mixed_precision") == "bf16":
        trainer.setdefault("bf16", True)
    chosen = strategy or strategy_of(trainer, acc)
    if chosen not in STRATEGIES:
        raise ConfigError(f"--strategy {chosen!r}: choose one of {', '.join(STRATEGIES)}")
    layout = getattr(cfg, "layout", None)
    n = world_size_of(
        world_size, acc, launcher_world_size, layout.trainer_ranks if layout is not None else 1
    )
    problem = layout_problem(n, trainer)  # the same line the run would refuse with
    if problem:
        raise ConfigError(problem)
    shape = shape or model_shape(cfg.model)
    ctx = context_budget(cfg.engine, trainer, shape.factor)
    launch = launch_of(trainer, chosen, n)
    launch = replace(
        launch,
        layout=layout.describe() if layout is not None else "",
        episodes=episodes_per_step(n, trainer),
    )
    # the KL as a reward (rewards.kl_in_reward, trainer.beta 0) keeps TRL's reference model
    kl_reward = float(getattr(getattr(cfg, "rewards", None), "kl_in_reward", 0.0) or 0.0)
    if launch.beta == 0.0 and kl_reward > 0:
        launch = replace(launch, beta=kl_reward)
    if kl_reward > 0 and not launch.use_vllm and not trainer.get("sampling_logprobs"):
        launch = replace(launch, old_for_kl=True)
    return memory_plan(shape, launch, ctx, gpu_gb)


def ddp_warning(plan: MemoryPlan) -> str | None:
    """The train-start warning for a model of 7 B parameters or more under plain DDP."""
    if plan.launch.strategy != "ddp" or plan.shape.params < DDP_WARN_PARAMS:
        return None
    names = ("weights", "gradients", "ddp buckets", "optimizer (AdamW)", "reference model")
    parts = []
    for name in names:
        try:
            parts.append(f"{name} {plan.item(name).bytes / GB:.1f}")
        except KeyError:
            continue
    return (
        f"plain DDP with a {plan.shape.params / 1e9:.1f} B model: per GPU "
        + " + ".join(parts)
        + f" = {plan.phase_bytes('state') / GB:.1f} GB before activations (peak "
        f"{plan.total / GB:.1f} GB), and no fp32 master copy in bf16; use DeepSpeed ZeRO-3 or "
        "FSDP2 (docs/train/MULTI_GPU.md; paravt train --plan prints the numbers)"
    )
