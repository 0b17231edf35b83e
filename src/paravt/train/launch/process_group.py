"""The launch's process group: joined before HF sets up devices, checked, and left at the end.

Why here: a multi-process launch on CPUs needs the gloo group formed with the recipe's timeout
before transformers builds its arguments, and destroyed after a last barrier once training ends;
both are launch mechanics, not training. ``paravt.train.run`` and ``paravt.train.sft.run`` call
them in order: ``join_process_group`` -> ``check_process_group`` -> ... -> ``leave_process_group``.
"""

from __future__ import annotations

import dataclasses
import gc
import os
from dataclasses import dataclass
from datetime import timedelta

from paravt.config import build
from paravt.errors import ConfigError

__all__ = ["leave_process_group"]


@dataclass
class _GroupKeys:
    """The trainer keys that decide the process group, typed (no defaults: HF's are used)."""

    use_cpu: bool
    ddp_backend: str | None
    ddp_timeout: int


def join_process_group(trainer: dict, args_cls: type) -> bool:
    """Form a launch's CPU (gloo) process group with ``trainer.ddp_timeout``, before HF does;
    whether it formed one. Call it before ``args_cls`` (a ``TrainingArguments``) is built.

    transformers 5.24 passes ``ddp_timeout`` to the process group only on its GPU and DeepSpeed
    paths; with ``use_cpu`` it lets accelerate form the gloo group with torch's default timeout,
    30 minutes, so a rank left waiting in a collective waited 30 minutes whatever the recipe
    said. accelerate adopts a group that already exists (``PartialState`` reads its rank and
    size), so the group is formed here, with the timeout and the backend accelerate would pick.
    Only under a launcher that started several processes (torchrun's ``RANK``, ``WORLD_SIZE``,
    ``MASTER_ADDR``, ``MASTER_PORT``: read as facts about the launch) and only on HF's CPU path
    (``use_cpu``, or accelerate's own ``ACCELERATE_USE_CPU`` that HF honours too); the GPU
    (NCCL) and DeepSpeed paths already get the timeout from HF, and are left to it."""
    import torch.distributed as dist

    if not dist.is_available() or dist.is_initialized():
        return False
    launched = os.environ.get("WORLD_SIZE", "1")
    if not (launched.isdigit() and int(launched) > 1):
        return False
    if not all(k in os.environ for k in ("RANK", "MASTER_ADDR", "MASTER_PORT")):
        return False
    names = [f.name for f in dataclasses.fields(_GroupKeys)]
    defaults = {f.name: f.default for f in dataclasses.fields(args_cls) if f.name in names}
    keys = build(
        _GroupKeys,
        {**defaults, **{k: trainer[k] for k in names if k in trainer}},
        prefix="trainer.",
    )
    accelerate_cpu = os.environ.get("ACCELERATE_USE_CPU", "false").lower() in ("1", "true", "yes")
    if not (keys.use_cpu or accelerate_cpu):
        return False
    # accelerate's choice on CPU: MPI when torch has it and no backend is named, else gloo
    chosen = keys.ddp_backend or ("mpi" if dist.is_mpi_available() else "gloo")
    if chosen != "gloo":
        return False
    check_gloo_address()
    dist.init_process_group(backend="gloo", timeout=timedelta(seconds=keys.ddp_timeout))
    return True


def check_gloo_address() -> None:
    """Refuse, before the group forms, a launch over several machines in which gloo would offer
    the other nodes a loopback address.

    Without ``GLOO_SOCKET_IFNAME`` gloo binds to the address this host's name resolves to; where
    that is a loopback address (``127.0.0.1 vm`` in ``/etc/hosts``, common in containers) the
    other nodes cannot reach it. Found by the two-node rehearsal (``tests/train/test_two_nodes.py``):
    there one node failed in gloo's connect and the other hung in it, orphaned by its launcher.
    Several machines: the launcher's ``WORLD_SIZE`` above its ``LOCAL_WORLD_SIZE`` (facts about
    the launch, as ``join_process_group`` reads them)."""
    import socket

    world, local = os.environ.get("WORLD_SIZE", ""), os.environ.get("LOCAL_WORLD_SIZE", "")
    if not (world.isdigit() and local.isdigit() and int(world) > int(local)):
        return
    if os.environ.get("GLOO_SOCKET_IFNAME"):
        return
    host = socket.gethostname()
    try:
        resolved = socket.gethostbyname(host)
    except OSError:
        return  # gloo reports a name it cannot resolve itself
    if resolved.startswith("127.") or resolved == "::1":
        raise ConfigError(
            f"this launch spans machines ({world} ranks, {local} on this node), but this host's "
            f"name {host!r} resolves to {resolved}, a loopback address the other nodes cannot "
            "reach, and gloo would offer it to them: set GLOO_SOCKET_IFNAME to the network "
            "interface the nodes share (e.g. GLOO_SOCKET_IFNAME=eth0) on every node, or make "
            "each node's host name resolve to an address the others can reach"
        )


def check_process_group(world_size: int) -> None:
    """Refuse a multi-process launch whose processes did not join one process group.

    On a machine without a GPU, torchrun / ``accelerate launch --multi_gpu`` start N workers, but
    HF only forms the gloo group with ``use_cpu=true``; otherwise every worker trains alone as
    rank 0 and they all write the same run folder. ``WORLD_SIZE`` is the launcher's own report of
    how many workers it started (read as a fact, not as a setting)."""
    import os

    launched = os.environ.get("WORLD_SIZE", "1")
    launched_n = int(launched) if launched.isdigit() else 1
    if launched_n > 1 and world_size != launched_n:
        raise ConfigError(
            f"the launcher started {launched_n} processes but they did not join one process "
            f"group (the trainer sees {world_size}); without a GPU set trainer.use_cpu=true "
            "(gloo), with GPUs check that each process sees one"
        )


def leave_process_group() -> bool:
    """Whether this process prints the command's result (rank 0, or no process group).

    The process group is destroyed here, after a last barrier, once training is over, and its
    backends must go with it: a gloo backend whose threads are still running when the
    interpreter finalizes can abort the rank at exit ("terminate called without an active
    exception", exit -6) after its work is done, and the launcher then reports the whole run as
    failed. ``destroy_process_group`` only drops torch's own references; a backend lives on while
    any object holds its group, and under ZeRO-3 every parameter does (``ds_process_group``).
    So what holds a group is released first, and the rest once the groups are destroyed
    (``paravt.train.launch.teardown``): the backends' threads end inside this call, while the
    interpreter is whole."""
    import torch.distributed as dist

    from paravt.train.launch.teardown import (
        release_captured_groups,
        release_device_meshes,
        release_engine_references,
    )

    if not (dist.is_available() and dist.is_initialized()):
        return True
    rank = dist.get_rank()
    dist.barrier()
    release_engine_references()
    dist.destroy_process_group()
    release_device_meshes()
    release_captured_groups()
    gc.collect()  # a group held only by a collected cycle ends here, not at interpreter exit
    return rank == 0
