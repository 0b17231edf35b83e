"""The policy's weights, whole and in the serving dtype, bucket by bucket: what a weight push sends.

Why: the server holds every tensor whole, in the dtype it serves (bfloat16 on GPUs), while the
learner may hold its weights sharded (FSDP2 ``DTensor`` shards, DeepSpeed ZeRO-3 partitions) and
in another dtype (fp32 masters). Gathering the whole state dict first
(``accelerator.get_state_dict``) holds the whole model at once in the learner's dtype; writing it
as it is doubles the bytes of an fp32 policy served in bf16. Here:

- the tensors (parameters and persistent buffers, in ``state_dict`` order and names, a tied
  weight once) are planned into buckets from their full shapes, the same plan on every rank
  (``plan_buckets``): a bucket holds at most ``bucket_bytes``, counted at the larger of the
  learner's and the serving dtype's size (so both the gathered bucket and its cast copy fit the
  bound); a tensor larger than the bound is a bucket of its own;
- ``gathered_buckets`` gathers one bucket at a time on every rank (the gathers are collectives,
  in one order everywhere): ZeRO-3 partitions with ``deepspeed.zero.GatheredParameters`` over
  the bucket's parameters, FSDP2 shards with ``DTensor.full_tensor()``, plain tensors as they
  are. The rank that keeps the weights (``keep``: the one that sends them) copies each tensor to
  ``device`` in the serving dtype; the others keep nothing. So a rank holds at most one gathered
  bucket of the learner's weights at a time, and the keeping rank one more copy per bucket its
  consumer has not let go of. With ``own=False`` a tensor that is already whole on ``device``
  (a plain model's) is handed over as a view of the live weights, and cast by its consumer
  (``Bucket.ready``, on the consumer's thread: a folder push's writers cast in parallel): for a
  consumer that is done with the bucket before the weights change (a push that holds its
  caller until then); ZeRO-3's gather buffer is always copied (it is freed when the bucket
  ends).

The names are the modules' own (``state_dict``), which are the checkpoint's for the models paravt
trains (Qwen3-VL, Qwen2.5-VL: ``save_pretrained`` writes the same keys), with the two wrapper
fixes TRL's ``async_grpo`` applies (``_iter_vllm_named_params``): a DDP ``module.`` prefix and
FSDP's activation-checkpoint wrapper are dropped. TRL's own iterator is not used: it leaves out
frozen parameters (a frozen vision tower is still the server's to load from a folder), casts
nothing and gathers no ZeRO-3 partition.

torch (and DeepSpeed, only when the model is partitioned by it) are imported inside the functions:
heavy optional libraries for the rollout room.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["gathered_buckets"]

#: the dtypes a push may send (vLLM's ``--dtype`` names); ``auto``: the learner's own
SERVING_DTYPES = ("auto", "float32", "bfloat16", "float16")


@dataclass(frozen=True)
class Entry:
    """One tensor of the plan: its name, full shape and the learner's dtype (a ``torch.dtype``)."""

    name: str
    shape: tuple[int, ...]
    dtype: Any
    how: str  # "plain", "dtensor" (FSDP2) or "zero3"

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= int(d)
        return n


@dataclass
class Bucket:
    """One gathered bucket: its index in the plan, its tensors' names, and, on the keeping rank,
    the tensors themselves (full, on the device asked for; empty on the other ranks): in the
    serving ``dtype``, or still views in the learner's where the gather left the cast to the
    consumer (``own=False``): ``ready()`` gives them in the serving dtype either way.
    ``nbytes`` is their size in the serving dtype, known on every rank."""

    index: int
    names: list[str]
    nbytes: int
    tensors: list[Any] = field(default_factory=list)
    dtype: Any = None

    def ready(self) -> list[Any]:
        """The tensors in the serving dtype (cast here, on the caller's thread, if needed)."""
        if self.dtype is None:
            return list(self.tensors)
        return [t if t.dtype == self.dtype else t.to(self.dtype) for t in self.tensors]

    def needs_cast(self) -> bool:
        """Whether ``ready`` would cast: the gather left views in the learner's dtype."""
        return self.dtype is not None and any(t.dtype != self.dtype for t in self.tensors)

    def ready_into(self, buffer: bytearray) -> list[Any]:
        """``ready()``, cast into ``buffer`` (at least ``span()`` bytes, CPU tensors only) rather
        than into fresh memory: a buffer kept from push to push has its pages touched once,
        where fresh memory is faulted in every time (5x the cast's own cost on this host). Each
        tensor is a ``torch.frombuffer`` of its own slice, so none shares a storage with another
        (safetensors refuses tensors that do)."""
        import torch

        out, at = [], 0
        for t in self.tensors:
            dst = torch.frombuffer(buffer, dtype=self.dtype, count=t.numel(), offset=at)
            out.append(dst.view(t.shape).copy_(t))
            at += _aligned(t.numel() * self.dtype.itemsize)
        return out

    def span(self) -> int:
        """The bytes ``ready_into`` lays the tensors out in (each slice 64-byte aligned)."""
        size = self.dtype.itemsize if self.dtype is not None else 0
        return sum(_aligned(t.numel() * (size or t.element_size())) for t in self.tensors)


def _aligned(n: int) -> int:
    return -(-int(n) // 64) * 64


def torch_dtype(name: str | None) -> Any:
    """``bfloat16`` / ``torch.bfloat16`` / ``float16`` / ``float32`` as a ``torch.dtype``;
    ``auto``, ``None`` or ``""`` → ``None`` (the learner's own dtype)."""
    import torch

    text = str(name or "auto").removeprefix("torch.")
    aliases = {"half": "float16", "bf16": "bfloat16", "fp16": "float16", "float": "float32"}
    text = aliases.get(text, text)
    if text == "auto":
        return None
    if text not in SERVING_DTYPES:
        raise ValueError(f"serving dtype {name!r}: use one of {', '.join(SERVING_DTYPES)}")
    return getattr(torch, text)


def _clean(name: str) -> str:
    return name.removeprefix("module.").replace("_checkpoint_wrapped_module.", "")


def _entry(name: str, t: Any) -> Entry:
    from torch.distributed.tensor import DTensor

    if hasattr(t, "ds_id"):  # a DeepSpeed ZeRO-3 parameter: its own shape is the partition's
        return Entry(_clean(name), tuple(int(d) for d in t.ds_shape), t.dtype, "zero3")
    how = "dtensor" if isinstance(t, DTensor) else "plain"
    return Entry(_clean(name), tuple(int(d) for d in t.shape), t.dtype, how)


def tensors_of(model: Any) -> list[tuple[Entry, Any]]:
    """``(entry, tensor)`` for every tensor of ``model.state_dict()`` (parameters as the
    ``Parameter`` objects, persistent buffers), a tensor shared by several names (tied weights)
    under its first name only."""
    seen: set[int] = set()
    out = []
    for name, t in model.state_dict(keep_vars=True).items():
        if id(t) in seen:
            continue
        seen.add(id(t))
        out.append((_entry(name, t), t))
    return out


def _size(entry: Entry, dtype: Any) -> tuple[int, int]:
    """(bytes counted against the bound, bytes in the serving dtype)."""
    src = entry.dtype.itemsize
    dst = (dtype or entry.dtype).itemsize
    return entry.numel * max(src, dst), entry.numel * dst


def plan_buckets(entries: list[Entry], dtype: Any, bucket_bytes: int) -> list[list[int]]:
    """The plan (module doc): lists of indices into ``entries``, in order."""
    if bucket_bytes <= 0:
        raise ValueError(f"bucket_bytes must be > 0, not {bucket_bytes}")
    plan: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i, e in enumerate(entries):
        counted, _ = _size(e, dtype)
        if current and used + counted > bucket_bytes:
            plan.append(current)
            current, used = [], 0
        current.append(i)
        used += counted
    if current:
        plan.append(current)
    return plan


def manifest(model: Any, dtype: Any) -> tuple[list[str], list[str], list[list[int]]]:
    """``(names, dtype names, shapes)`` of what ``gathered_buckets`` yields, in order, without
    gathering anything: what a receiver sizes its buffers from (vLLM's NCCL update info)."""
    entries = [e for e, _ in tensors_of(model)]
    names = [e.name for e in entries]
    dtypes = [str(dtype or e.dtype).removeprefix("torch.") for e in entries]
    return names, dtypes, [list(e.shape) for e in entries]


def gathered_buckets(
    model: Any,
    *,
    dtype: Any,
    bucket_bytes: int,
    keep: bool,
    device: Any = "cpu",
    own: bool = True,
) -> Iterator[Bucket]:
    """The model's tensors bucket by bucket (module doc). Call it on every rank, in step: each
    bucket's gathers are collectives. ``dtype``: the serving ``torch.dtype`` (None: the
    learner's); ``keep``: this rank keeps the tensors (on ``device``); ``own=False``: tensors
    already whole on ``device`` are handed as views, cast by ``Bucket.ready`` (module doc)."""
    import torch

    pairs = tensors_of(model)
    entries = [e for e, _ in pairs]
    if keep and torch.device(device).type == "cuda":
        # a consumer may drive this generator from a thread of its own (TRL's NCCL sender
        # does): CUDA's current device is per thread
        torch.cuda.set_device(torch.device(device))
    for index, members in enumerate(plan_buckets(entries, dtype, bucket_bytes)):
        bucket = Bucket(index, [entries[i].name for i in members], 0, dtype=dtype)
        bucket.nbytes = sum(_size(entries[i], dtype)[1] for i in members)
        with torch.no_grad(), _zero3_gathered([pairs[i] for i in members]):
            for i in members:
                full = _full(*pairs[i])
                if keep:
                    bucket.tensors.append(_kept(full, pairs[i][0], dtype, device, own))
                del full
        yield bucket


def named_tensors(buckets: Iterator[Bucket]) -> Iterator[tuple[str, Any]]:
    """``(name, tensor)`` one at a time, for a consumer that takes a stream (vLLM's packed NCCL
    broadcast). On a rank that keeps nothing it only drives the gathers."""
    for bucket in buckets:
        yield from zip(bucket.names, bucket.ready(), strict=False)


def _full(entry: Entry, t: Any) -> Any:
    if entry.how == "dtensor":
        return t.full_tensor()  # a collective: every rank of the mesh
    return t.data if entry.how == "zero3" else t.detach()


def _kept(full: Any, entry: Entry, dtype: Any, device: Any, own: bool) -> Any:
    """What the keeping rank holds of one tensor (module doc): ``full`` on ``device`` in
    ``dtype``, in memory of its own — never the live parameter (the optimizer changes it in
    place) nor ZeRO-3's gather buffer (freed when the bucket ends) — or, with ``own=False``, a
    tensor already whole on ``device`` as it is. A sharded tensor's ``full_tensor()`` is already
    a fresh all-gathered copy."""
    import torch

    if not own and entry.how == "plain" and full.device == torch.device(device):
        return full.contiguous()
    out = full.to(device=device, dtype=dtype or full.dtype)
    if entry.how != "dtensor" and out.data_ptr() == full.data_ptr():
        out = out.clone()
    return out.contiguous()


class _zero3_gathered:
    """``deepspeed.zero.GatheredParameters`` over the bucket's ZeRO-3 parameters (read only),
    or nothing when it has none."""

    def __init__(self, pairs: list[tuple[Entry, Any]]):
        self.params = [t for e, t in pairs if e.how == "zero3"]
        self._ctx: Any = None

    def __enter__(self) -> None:
        if self.params:
            import deepspeed

            self._ctx = deepspeed.zero.GatheredParameters(self.params, modifier_rank=None)
            self._ctx.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self._ctx is not None:
            self._ctx.__exit__(*exc)
