"""An estimate of one optimizer step's time, to budget GPU hours before a run (``--plan``).

Why: the memory plan says whether a run fits; a user also needs to know what it costs. This is
arithmetic over the plan's shapes and caps, not a measurement, and every episode is taken at its
caps (every turn at ``max_new_tokens``), so it is an upper bound for the rollout. Formula, per
optimizer step:

    step = rollouts × (decode steps × time a decode step + prefill FLOPs / (peak × MFU))
         + loss FLOPs / (peak × MFU)

- ``rollouts`` = gradient_accumulation_steps / (steps_per_generation × num_iterations) (1 with
  TRL's defaults).
- **decode steps** = ``max_turns × max_new_tokens + forced answer`` (+ ``max_turns ×
  subagent_max_tokens`` with sub-agents: they run after each tool turn). Decoding is bound by
  memory bandwidth: a step reads the weights once (bf16, ``P × 2 / tp``) and the batch's KV
  cache at half the longest context (the weights once per wave where a colocated share's KV
  cache holds only part of the batch), so ``time a decode step = bytes / (HBM bandwidth ×
  DECODE_EFFICIENCY[engine])``. The batch is the rank's episodes (HF generate, colocated vLLM)
  or every rank's (one server).
- **prefill FLOPs** = ``2 × P × tokens prefilled``: with vLLM's prefix cache each context once;
  HF generate prefills the whole stream again each round (``max_turns + 1`` times).
- **loss FLOPs** = per row of ``L`` tokens, forward ``2 × P × L + 2 × layers × hidden × L²``
  (the weights, and causal attention's scores and values), the backward twice the forward, one
  more forward with gradient checkpointing, plus a forward (no backward) for TRL's reference
  model (``beta != 0``, or the KL as a reward) and for the old policy's log-probs (with vLLM's
  importance sampling, when the accumulation is not a multiple of the generation's reuse, or for
  the KL reward when the sampler gives no log-probs).

Not counted: communication (ZeRO-3 / FSDP gathers, the weight push), tool decoding on the host,
the vision tower's own attention, stalls. The GPU is named by ``--gpu`` (``GPUS``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from paravt.errors import ConfigError
from paravt.train.launch.plan import MemoryPlan, kv_bytes_per_token, rows_a_forward

__all__ = ["DEFAULT_GPU", "GPUS", "format_step_time", "gpu_of", "step_time"]

#: the fraction of the bf16 peak the loss and prefill matmuls reach. Why 0.35: long (20k-token)
#: rows at micro-batch 1 under HF Trainer with ZeRO-3 / FSDP and gradient checkpointing sit below
#: the ~40% that tuned pretraining stacks (Megatron) report on H100; an assumption, not measured
MFU = 0.35
#: the fraction of HBM bandwidth a decode step reaches, per engine. Why: vLLM's CUDA-graph decode
#: streams the weights near the bandwidth roofline at these batch sizes; HF ``generate`` runs
#: eagerly, a Python loop with a kernel launch per op, several times slower. Assumptions, not
#: measured here (no GPU)
DECODE_EFFICIENCY = {"vllm": 0.6, "hf": 0.15}


@dataclass(frozen=True)
class Gpu:
    name: str
    #: dense bf16 tensor-core peak, TFLOP/s (vendor datasheet, without sparsity)
    bf16_tflops: float
    #: HBM bandwidth, TB/s
    hbm_tbps: float
    memory_gb: float


#: the SXM parts' datasheet figures (the PCIe / NVL variants are slower)
GPUS = {
    "h100": Gpu("H100 SXM", 989.0, 3.35, 80.0),
    "h200": Gpu("H200 SXM", 989.0, 4.8, 141.0),
    "a100": Gpu("A100 SXM 80GB", 312.0, 2.039, 80.0),
}
DEFAULT_GPU = "h100"


def gpu_of(name: str) -> Gpu:
    try:
        return GPUS[name.lower()]
    except KeyError:
        raise ConfigError(f"--gpu {name!r}: choose one of {', '.join(GPUS)}") from None


@dataclass
class StepTime:
    gpu: Gpu
    engine: str
    #: GPUs the step occupies: the trainer's, and a server's in server mode
    gpus: int
    rollouts: float
    decode_steps: int
    decode_step_s: float
    prefill_s: float
    loss_s: float
    lines: list[tuple[str, float, str]] = field(default_factory=list)

    @property
    def rollout_s(self) -> float:
        return self.rollouts * (self.decode_steps * self.decode_step_s + self.prefill_s)

    @property
    def step_s(self) -> float:
        return self.rollout_s + self.loss_s

    def gpu_hours(self, steps: int = 1) -> float:
        return self.step_s * steps * self.gpus / 3600

    def to_dict(self) -> dict:
        return {
            "estimate": True,
            "gpu": self.gpu.name,
            "engine": self.engine,
            "mfu": MFU,
            "decode_efficiency": DECODE_EFFICIENCY[self.engine],
            "decode_steps": self.decode_steps,
            "decode_step_ms": round(self.decode_step_s * 1e3, 3),
            "rollout_s": round(self.rollout_s, 2),
            "loss_s": round(self.loss_s, 2),
            "step_s": round(self.step_s, 2),
            "gpus": self.gpus,
            "gpu_hours_per_100_steps": round(self.gpu_hours(100), 2),
            "lines": [{"name": n, "s": round(v, 3), "formula": f} for n, v, f in self.lines],
        }


def _loss_flops(
    plan: MemoryPlan, reuse: int, rollouts: float
) -> tuple[float, int, float, list[str], float]:
    """The loss's FLOPs a step: ``passes`` (forward, backward ×2, a recompute under gradient
    checkpointing) over the loss rows, plus one forward of the generated rows for the reference
    (beta ≠ 0) and for the old policy (TRL 1.16's rule). Returns the loss rows, the passes, the
    generated rows, the extra forwards' names and the FLOPs."""
    s, la, ctx = plan.shape, plan.launch, plan.context
    L = ctx.context_tokens

    def forward(rows: float) -> float:
        return rows * (2 * s.params * L + 2 * s.layers * s.hidden * L * L)

    loss_rows = rows_a_forward(la, ctx) * la.accumulation
    passes = 3 + (1 if la.gradient_checkpointing else 0)
    flops = passes * forward(loss_rows)
    gen_rows = rollouts * la.rollout_batch
    extra: list[str] = []
    if la.beta != 0.0:
        flops += forward(gen_rows)
        extra.append("reference")
    vllm_old = la.use_vllm and la.vllm_importance_sampling
    if la.accumulation % reuse != 0 or vllm_old or la.old_for_kl:
        flops += forward(gen_rows)
        extra.append("old policy")
    return loss_rows, passes, gen_rows, extra, flops


def step_time(plan: MemoryPlan, gpu: Gpu, server_gpus: int = 1) -> StepTime:
    """The estimate of one optimizer step of ``plan``'s run on ``gpu`` (see the module)."""
    s, la, ctx = plan.shape, plan.launch, plan.context
    engine = "vllm" if la.use_vllm else "hf"
    server = la.use_vllm and la.vllm_mode == "server"
    peak = gpu.bf16_tflops * 1e12 * MFU
    L = ctx.context_tokens
    reuse = max(1, la.rollout_batch // max(1, la.micro_batch)) * max(1, la.num_iterations)
    rollouts = la.accumulation / reuse  # steps_per_generation × num_iterations micro-steps each
    tp = server_gpus if server else (la.vllm_tensor_parallel_size if la.use_vllm else 1)
    tp = max(1, tp)
    batch = la.rollout_batch * (la.world_size if server else 1)
    sub = ctx.evidence == "subagent"
    decode_steps = ctx.max_turns * ctx.max_new_tokens + ctx.forced_tokens
    if sub:
        decode_steps += ctx.max_turns * ctx.subagent_max_tokens
    weights = s.params * 2 / tp
    kv = batch * (L / 2) * kv_bytes_per_token(s) / tp
    eff = DECODE_EFFICIENCY[engine]
    # a colocated share too small for the batch's KV cache decodes it in waves (vLLM queues)
    room = plan.vllm_share - plan.vllm_weights
    waves = 1
    if la.colocated_vllm and room > 0:
        waves = max(1, math.ceil(batch * L * kv_bytes_per_token(s) / tp / room))
    decode_step_s = (waves * weights + kv) / (gpu.hbm_tbps * 1e12 * eff)
    prefills = 1 if la.use_vllm else ctx.max_turns + 1
    pre_tokens = batch * L * prefills
    if sub:
        pre_tokens += batch * ctx.max_turns * ctx.max_parallel * ctx.subagent_tokens
    prefill_s = 2 * s.params * pre_tokens / tp / peak

    loss_rows, passes, gen_rows, extra, loss_flops = _loss_flops(plan, reuse, rollouts)
    loss_s = loss_flops / peak
    est = StepTime(
        gpu=gpu,
        engine=engine,
        gpus=la.world_size + (server_gpus if server else 0),
        rollouts=rollouts,
        decode_steps=decode_steps,
        decode_step_s=decode_step_s,
        prefill_s=prefill_s,
        loss_s=loss_s,
    )
    steps_f = f"{ctx.max_turns} turns × {ctx.max_new_tokens} + {ctx.forced_tokens} forced"
    if sub:
        steps_f += f" + {ctx.max_turns} × {ctx.subagent_max_tokens} sub-agent"
    where = (
        f"the server's {tp} GPU(s), {batch} episodes of {la.world_size} ranks"
        if server
        else f"each rank, {batch} episodes"
    )
    est.lines = [
        (
            "decode",
            rollouts * decode_steps * decode_step_s,
            f"{decode_steps:,} steps ({steps_f}) × {decode_step_s * 1e3:.2f} ms = ({f'{waves} waves × ' if waves > 1 else ''}P × 2 / {tp} "
            f"+ {batch} × {L // 2:,} tokens × {kv_bytes_per_token(s):,} B KV / {tp}) / "
            f"({gpu.hbm_tbps:g} TB/s × {eff:g}) on {where}"
            + (f" (the share's KV cache holds 1/{waves} of the batch)" if waves > 1 else ""),
        ),
        (
            "prefill",
            rollouts * prefill_s,
            f"2 × P × {pre_tokens:,} tokens / {tp} / ({gpu.bf16_tflops:g} TFLOP/s × {MFU:g})",
        ),
        (
            "loss",
            loss_s,
            f"({passes} × {loss_rows:g} rows"
            + "".join(f" + {gen_rows:g} {name} rows" for name in extra)
            + f") × (2 × P × {L:,} + 2 × {s.layers} × {s.hidden} × {L:,}²) FLOPs / "
            f"({gpu.bf16_tflops:g} TFLOP/s × {MFU:g})",
        ),
    ]
    if rollouts != 1:
        name, secs, formula = est.lines[0]
        est.lines[0] = (name, secs, f"{formula}; × {rollouts:g} rollouts a step")
    return est


def format_step_time(est: StepTime) -> str:
    """The estimate as text, each line with its formula (``paravt train --plan``)."""
    lines = [
        f"step time, an ESTIMATE (not measured; every episode at its caps): {est.gpu.name}, "
        f"{est.gpu.bf16_tflops:g} TFLOP/s bf16, {est.gpu.hbm_tbps:g} TB/s; MFU {MFU:g}, decode "
        f"at {DECODE_EFFICIENCY[est.engine]:g} of HBM bandwidth ({est.engine})",
    ]
    for name, secs, formula in est.lines:
        lines.append(f"{name:<28} {secs:>8.1f} s  {formula}")
    lines.append(
        f"{'step':<28} {est.step_s:>8.1f} s  on {est.gpus} GPU(s): "
        f"{est.gpu_hours(100):.1f} GPU-hours per 100 steps"
    )
    return "\n".join(lines)
