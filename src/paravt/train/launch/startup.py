"""Start-up on every rank: one model path for all ranks, each rank's share of the data checks,
and the memory plan's warning before a plain-DDP run of a big model.

The tiny model of a ``tiny:<arch>`` spec is built once, on the main process and whole (never
ZeRO-3 partitions), and its path is broadcast.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from paravt.data import Split
from paravt.errors import ConfigError
from paravt.models.tiny import make_tiny_model
from paravt.train.launch.plan import (
    ddp_warning,
    kv_refusal,
    model_shape,
    plan_for_command,
)

__all__ = ["resolve_model"]

logger = logging.getLogger(__name__)


def resolve_model(spec: str, run_dir: Path) -> str:
    """A model folder or Hub id as given; ``tiny:<arch>[:<preset>]`` builds a small random model
    (``paravt.models.tiny.PRESETS``: ``tiny`` by default, ``toy`` for the toy task) into the
    run folder once."""
    if spec.startswith("tiny:"):
        parts = spec.split(":")
        arch = parts[1] or "qwen3-vl"
        preset = parts[2] if len(parts) > 2 and parts[2] else "tiny"
        name = f"tiny-{arch}" if preset == "tiny" else f"{preset}-{arch}"
        target = run_dir / name
        if not (target / "config.json").is_file():
            make_tiny_model(target, arch=arch, preset=preset)
        return str(target)
    return spec


@contextmanager
def whole_models(args: Any):
    """Models built inside are whole, not ZeRO-3 partitions.

    While the trainer's DeepSpeed config is live with stage 3, transformers builds every model
    inside ``deepspeed.zero.Init``, which partitions each parameter as it is made: a collective.
    The tiny model is built on the main process only (then saved for every rank to load), so a
    partitioned build would wait for ranks that never join, and would save empty weights."""
    hf_config = getattr(args, "hf_deepspeed_config", None)
    if hf_config is None:
        yield
        return
    from transformers.integrations.deepspeed import (
        set_hf_deepspeed_config,
        unset_hf_deepspeed_config,
    )

    unset_hf_deepspeed_config()
    try:
        yield
    finally:
        set_hf_deepspeed_config(hf_config)


def shared_model_path(spec: str, run_dir: Path, args: Any) -> str:
    """``resolve_model`` on the main process, the same path on every rank."""
    model_path = None
    if args.process_index == 0:
        with whole_models(args):
            model_path = resolve_model(spec, run_dir)
    if args.world_size > 1:
        from accelerate.utils import broadcast_object_list

        holder = [model_path]
        broadcast_object_list(holder, from_process=0)
        model_path = holder[0]
    return str(model_path)


def rank_split(args: Any) -> Split:
    """This process's share of the start-up checks (``args``: the trainer's process index and
    world size)."""
    world = int(args.world_size)
    if world <= 1:
        return Split()
    from accelerate.utils import gather_object

    return Split(rank=int(args.process_index), world=world, gather=gather_object)


def warn_if_plain_ddp_too_big(cfg: Any, args: Any, model_path: str) -> str | None:
    """Main process, plain DDP (no DeepSpeed, no FSDP), a model of 7 B parameters or more: log
    the memory plan's numbers and the sharded strategies (``paravt.train.launch.plan.ddp_warning``).
    Counted on the meta device from the folder's config.json (a Hub id is skipped)."""
    kind = str(getattr(getattr(args, "distributed_state", None), "distributed_type", ""))
    if (
        args.process_index != 0
        or args.deepspeed
        or args.fsdp
        or kind.endswith(("FSDP", "DEEPSPEED"))
    ):
        return None
    if not (Path(model_path) / "config.json").is_file():
        return None
    plan = plan_for_command(
        cfg, world_size=args.world_size, strategy="ddp", shape=model_shape(model_path)
    )
    message = ddp_warning(plan)
    if message:
        logger.warning(message)
    return message


def colocated_model_length(
    cfg: Any, args: Any, model_path: str, gpu_bytes: float | None
) -> int | None:
    """Colocated vLLM on GPUs: set ``args.vllm_max_model_length`` (when the recipe leaves it
    unset) to the plan's longest episode (``MemoryPlan.vllm_max_model_length``: the frame and
    turn budget), capped at the model's own context, and refuse with one line, before any model
    loads, a share whose KV cache cannot hold one episode. TRL would pass ``None`` and vLLM size
    for the model's whole context (Qwen3-VL: 262,144 tokens, 38.7 GB of KV at 8B).

    ``gpu_bytes``: the GPU's memory (None: no CUDA device, nothing is done; vLLM's CPU backend
    sizes its KV cache from its own setting). Returns the length set, or None."""
    if not (args.use_vllm and args.vllm_mode == "colocate") or gpu_bytes is None:
        return None
    if not (Path(model_path) / "config.json").is_file():
        return None
    plan = plan_for_command(
        cfg, world_size=args.world_size, shape=model_shape(model_path), gpu_gb=gpu_bytes / 1e9
    )
    if args.vllm_max_model_length is None:
        own = _model_context(model_path)
        length = plan.vllm_max_model_length
        args.vllm_max_model_length = min(length, own) if own else length
    if plan.vllm_kv_tokens < args.vllm_max_model_length:
        raise ConfigError(kv_refusal(plan))
    return int(args.vllm_max_model_length)


def _model_context(model_path: str) -> int | None:
    import json

    cfg = json.loads((Path(model_path) / "config.json").read_text())
    text = cfg.get("text_config", cfg)
    value = text.get("max_position_embeddings")
    return int(value) if value else None


def gpu_memory_bytes() -> float | None:
    """This rank's GPU memory, or None without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return None
    return float(torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory)
