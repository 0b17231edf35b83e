"""One rank of ``test_weight_push_ranks`` (run under torchrun, 2 gloo ranks, CPU).

``argv``: mode, output folder, then the mode's arguments.

- ``fsdp2`` / ``zero3``: a tiny random Qwen3-VL (the same seed on both ranks), sharded with
  FSDP2 (``fully_shard`` on a 2-rank CPU mesh) or partitioned by DeepSpeed ZeRO-3
  (``deepspeed.zero.Init``), gathered by ``gathered_buckets`` in bfloat16 with a small bound.
  Rank 0 saves the unsharded state dict it had before sharding (``want.pt``) and what it
  gathered (``got.pt``); each rank writes ``rank{r}.json`` (its buckets' names, byte counts and
  how many tensors it kept).
- ``nccl``: the FSDP2 model pushed by ``NCCLPush``, rank 0's transfer replaced by a recorder
  that consumes the stream on a thread of its own, as TRL's ``WeightTransferClient`` does (no
  NCCL here): rank 0 saves what it was given (``got.pt``), and each rank says whether it opened
  a transfer.
- ``nccl-gpu`` (server URL, model folder; **not run**: needs CUDA and a vLLM server on another
  GPU): the model folder's weights with ``lm_head`` scaled by 4 (other weights than the
  server's), FSDP2-sharded on the CPU ranks, pushed over NCCL from rank 0's GPU by the real
  ``NCCLPush`` twice; the weights probe's gap before and after each push goes to
  ``rank{r}.json``.
- ``overlap`` (server URL): the overlapped folder push of that model to a stand-in server, its
  outcome over ``outcome_broadcast``, driven by the real ``ServerGeneration`` over a server pool;
  each rank then sends one sampling request and settles, and writes what happened (the error,
  if any) to ``rank{r}.json``.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import torch
import torch.distributed as dist

from paravt.models.tiny import build_tiny
from paravt.rollout.weight_gather import gathered_buckets
from paravt.rollout.weight_push import (
    FolderReloadPush,
    NCCLPush,
    WeightPushError,
    outcome_broadcast,
)

BOUND = 96 * 1024


def gather_object(shares: list) -> list:
    """accelerate's ``gather_object`` on the default group: every rank's list, concatenated."""
    out: list = [None] * dist.get_world_size()
    dist.all_gather_object(out, shares)
    return [x for part in out for x in part]


def unique_state_dict(model) -> dict:
    seen, out = set(), {}
    for k, v in model.state_dict().items():
        if v.data_ptr() not in seen:
            seen.add(v.data_ptr())
            out[k] = v.detach().clone()
    return out


def shard_fsdp2(model) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor import DTensor

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    for layer in model.model.language_model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    params = list(model.parameters())
    assert all(isinstance(p, DTensor) for p in params)
    assert sum(p.to_local().numel() for p in params) < sum(p.numel() for p in params)


def shard_zero3(model) -> None:
    # as sharded_lockstep_worker.deepspeed_on_cpu: DeepSpeed's CPU group would JIT-compile a
    # shared-memory all-reduce (C++) first, minutes on a busy 2-core host; nothing here uses it
    importlib.import_module("deepspeed.comm.torch").build_shm_op = lambda: None
    import deepspeed

    deepspeed.init_distributed(dist_backend="gloo")
    config = {"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 1}
    deepspeed.zero.Init(module=model, config_dict_or_path=config)
    params = list(model.parameters())
    assert all(hasattr(p, "ds_id") for p in params)
    assert sum(p.ds_tensor.numel() for p in params) < sum(p.ds_numel for p in params)


def gather(mode: str, out: Path) -> None:
    rank = dist.get_rank()
    model, _ = build_tiny("qwen3-vl", seed=5)
    if rank == 0:
        torch.save(unique_state_dict(model), out / "want.pt")
    (shard_fsdp2 if mode == "fsdp2" else shard_zero3)(model)
    buckets = list(
        gathered_buckets(model, dtype=torch.bfloat16, bucket_bytes=BOUND, keep=rank == 0)
    )
    if rank == 0:
        got = {n: t for b in buckets for n, t in zip(b.names, b.tensors, strict=True)}
        torch.save(got, out / "got.pt")
    report = {
        "buckets": [b.names for b in buckets],
        "nbytes": [b.nbytes for b in buckets],
        "kept": sum(len(b.tensors) for b in buckets),
    }
    (out / f"rank{rank}.json").write_text(json.dumps(report))


class SendRecorder:
    """In place of TRL's ``WeightTransferClient`` on rank 0: what ``NCCLPush`` asks of it."""

    def __init__(self):
        self.calls: list[str] = []
        self.sent: dict = {}

    def pause(self) -> None:
        self.calls.append("pause")

    def resume(self) -> None:
        self.calls.append("resume")

    def send_weights(self, iterator) -> None:
        import threading

        self.calls.append("send_weights")
        thread = threading.Thread(target=lambda: self.sent.update(iterator))
        thread.start()
        thread.join()


def nccl(out: Path) -> None:
    rank = dist.get_rank()
    model, _ = build_tiny("qwen3-vl", seed=5)
    if rank == 0:
        torch.save(unique_state_dict(model), out / "want.pt")
    shard_fsdp2(model)
    after: list[int] = []
    push = NCCLPush(
        "http://nowhere:1", lambda: model, is_main=rank == 0, bucket_bytes=BOUND,
        device="cpu", dtype=torch.bfloat16, gather=gather_object, after=lambda: after.append(1),
    )  # fmt: skip
    if rank == 0:
        push.transfer = SendRecorder()
    push.push(0)
    report = {"opened": push.transfer is not None, "pushed": push.pushed, "after": len(after)}
    if rank == 0:
        report["calls"] = push.transfer.calls
        torch.save(push.transfer.sent, out / "got.pt")
    (out / f"rank{rank}.json").write_text(json.dumps(report))


def nccl_gpu(out: Path, url: str, model_dir: str) -> None:
    """Not run here (module doc)."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from paravt.rollout.vllm_server import WeightsProbe
    from paravt.rollout.vllm_server_client import VLLMServerClient

    rank = dist.get_rank()
    model = AutoModelForImageTextToText.from_pretrained(model_dir, dtype=torch.float32)
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)
    shard_fsdp2(model)
    client = VLLMServerClient(url)
    probe = WeightsProbe(
        client, AutoProcessor.from_pretrained(model_dir), is_main=rank == 0, gather=gather_object
    )

    def reset_caches() -> None:
        for cache in ("prefix", "encoder", "mm"):
            client.call("POST", f"/reset_{cache}_cache")

    push = NCCLPush(
        url, lambda: model, is_main=rank == 0, bucket_bytes=BOUND, dtype=torch.bfloat16,
        device="cuda:0" if rank == 0 else "cpu", gather=gather_object, after=reset_caches,
    )  # fmt: skip
    gaps = [probe.gap(model)]
    for step in (0, 1):  # the second push reuses the group the first one opened
        push.push(step)
        gaps.append(probe.gap(model))
    report = {"gaps": gaps, "opened": push.transfer is not None, "pushed": push.pushed}
    (out / f"rank{rank}.json").write_text(json.dumps(report))


def overlap(out: Path, url: str) -> None:
    from paravt.rollout.vllm_server import ServerGeneration
    from paravt.rollout.vllm_server_client import VLLMServerClient
    from paravt.rollout.vllm_servers import ServerPool

    rank = dist.get_rank()
    model, _ = build_tiny("qwen3-vl", seed=5)
    pool = ServerPool([VLLMServerClient(url, retries=0)])
    push = FolderReloadPush(
        out / "push", reload=pool.reload_weights, is_main=rank == 0, gather=gather_object,
        server=url, overlap=True, broadcast=outcome_broadcast(60),
        buckets=lambda: gathered_buckets(
            model, dtype=torch.bfloat16, bucket_bytes=BOUND, keep=rank == 0, own=False
        ),
    )  # fmt: skip
    gen = ServerGeneration(pool, push)
    gen.sync_weights()
    # its outcome not known yet (rank 0's pool learns the folder when its reload starts: not it)
    report: dict = {"returned_before_loaded": push.pushing}
    try:
        reply = gen.generate_one([1, 2, 3], None, max_tokens=1, temperature=1.0, top_p=1.0)
        report["sampled"] = list(reply.token_ids)
        report["pool_folder"] = pool.folder
    except WeightPushError as e:
        report["request_error"] = str(e)
    try:
        gen.settle()
        report["pushed"] = push.pushed
    except WeightPushError as e:
        report["settle_error"] = str(e)
    pool.close()
    (out / f"rank{rank}.json").write_text(json.dumps(report))


def main() -> None:
    mode, out = sys.argv[1], Path(sys.argv[2])
    dist.init_process_group("gloo")
    try:
        if mode == "overlap":
            overlap(out, sys.argv[3])
        elif mode == "nccl":
            nccl(out)
        elif mode == "nccl-gpu":
            nccl_gpu(out, sys.argv[3], sys.argv[4])
        else:
            gather(mode, out)
        dist.barrier()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
