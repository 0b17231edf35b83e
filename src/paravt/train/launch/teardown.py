"""What a finished run leaves behind that keeps its process groups alive, and its release.

Why here: ``destroy_process_group`` drops torch's own references to a group, but a gloo backend
runs on while any object still holds its group; one that is torn down only when the interpreter
finalizes can abort the rank at exit, after its work is done. The holders found on 2 gloo ranks
(test_sharded_lockstep) are released here: the trainer's engine, DeepSpeed's module globals, the
device meshes DTensor's caches keep, and default arguments that captured the world group. The
launch's ``leave_process_group`` calls them; ``train_and_save`` calls ``release_trainer``.
"""

from __future__ import annotations

import gc
import sys
import types
from typing import Any

__all__ = [
    "release_captured_groups",
    "release_device_meshes",
    "release_engine_references",
    "release_trainer",
]


def release_trainer(trainer: Any) -> None:
    """Release what a finished (or failed) run's trainer holds through its accelerator, so the
    model and the process groups it names can be freed before ``leave_process_group``.

    accelerate's ``free_memory`` drops the accelerator's models and optimizers and, under
    DeepSpeed, calls ``engine.destroy()``, which removes the engine's module and gradient hooks.
    Those hooks live in autograd's C++ nodes and close over the engine, a cycle Python's
    collector cannot see, so without this a ZeRO-3 engine and its parameters (each naming its
    process group) live until the interpreter exits."""
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is not None:
        accelerator.free_memory()


def release_engine_references() -> None:
    """Drop what a finished run leaves in library globals, so its model (and the process groups
    its parameters name) can be freed: ``leave_process_group`` collects it once the groups are
    destroyed.

    DeepSpeed 0.19 keeps a ZeRO-3 run's model alive after training from
    ``parameter_offload.FWD_MODULE_STACK`` (a forward it entered from generate is never popped)
    and from the class-level ``lru_cache`` of
    ``PartitionedParameterCoordinator.__params_to_release`` (keyed by the coordinator and
    submodules), and the world group itself from ``deepspeed.utils.groups._WORLD_GROUP``.
    Measured on 2 gloo ranks (test_sharded_lockstep, ZeRO-3): without this the engine, its
    optimizer and all 64 parameters outlived ``destroy_process_group`` and two gloo backends were
    still running at exit; with two busy processes beside the ranks, 3 of 40 runs aborted in
    finalization. These names are private to DeepSpeed: where a release cannot find one (another
    version), it does nothing."""
    import torch.distributed as dist

    groups = sys.modules.get("deepspeed.utils.groups")
    for name, value in list(vars(groups).items()) if groups is not None else ():
        if isinstance(value, dist.ProcessGroup):
            setattr(groups, name, None)  # e.g. _WORLD_GROUP; DeepSpeed's own initial value
        elif isinstance(value, dict) and any(
            isinstance(v, dist.ProcessGroup) for v in value.values()
        ):
            value.clear()
    offload = sys.modules.get("deepspeed.runtime.zero.parameter_offload")
    stack = getattr(offload, "FWD_MODULE_STACK", None)
    if isinstance(stack, list):
        stack.clear()
    coordinator_module = sys.modules.get("deepspeed.runtime.zero.partitioned_param_coordinator")
    coordinator = getattr(coordinator_module, "PartitionedParameterCoordinator", None)
    method = getattr(coordinator, "_PartitionedParameterCoordinator__params_to_release", None)
    cached = _lru_cache_under(method)
    if cached is not None:
        cached.cache_clear()


def _lru_cache_under(function, depth: int = 3):
    """The ``functools.lru_cache`` wrapper inside ``function``'s decorators, or None: DeepSpeed
    puts ``instrument_w_nvtx`` (a plain closure, no ``__wrapped__``) over the cache."""
    if function is None or depth < 0:
        return None
    if callable(getattr(function, "cache_clear", None)):
        return function
    inner = [getattr(function, "__wrapped__", None)]
    inner += [cell.cell_contents for cell in getattr(function, "__closure__", None) or ()]
    for candidate in inner:
        if callable(candidate):
            found = _lru_cache_under(candidate, depth - 1)
            if found is not None:
                return found
    return None


def release_device_meshes() -> None:
    """Empty the process-group registry of every device mesh still alive, once the groups are
    destroyed, so the meshes no longer keep their backends running.

    FSDP2's parameters are DTensors, and torch's DTensor caches (the redistribute planner's
    cache, the ``lru_cache`` of mesh topologies and of sharding strategies) keep their device
    meshes for the life of the process; each mesh holds its groups in ``_pg_registry``. Measured
    on 2 gloo ranks (test_sharded_lockstep, FSDP2): with this release left out, the world
    group's gloo backend was still running after ``leave_process_group``. A destroyed group
    serves no mesh, so nothing is lost."""
    mesh_module = sys.modules.get("torch.distributed.device_mesh")
    mesh_type = getattr(mesh_module, "DeviceMesh", None)
    if not isinstance(mesh_type, type):
        return
    for obj in gc.get_objects():
        if issubclass(type(obj), mesh_type):
            registry = getattr(obj, "_pg_registry", None)
            if isinstance(registry, dict):
                registry.clear()


def release_captured_groups() -> None:
    """Set to None every default argument that captured a process group, in the functions and
    the classes' methods of every loaded module, once the groups are destroyed.

    A default like ``group=group.WORLD`` is evaluated when its module is imported; imported after
    the group formed, it holds the world group for the life of the process. Measured on 2 gloo
    ranks: ``torch.distributed.nn.functional``'s collectives did so under FSDP2
    (test_sharded_lockstep), and ``deepspeed.comm.torch.TorchBackend.barrier`` under plain DDP
    through ``paravt train`` (transformers imports DeepSpeed wherever it is installed); each kept
    the world group's gloo backend running after ``leave_process_group`` by itself. None is what
    ``group.WORLD`` reads once the group is gone, and what these functions take as "the default
    group"."""
    import torch.distributed as dist

    def release(function: Any) -> None:
        defaults = getattr(function, "__defaults__", None)
        if defaults and any(isinstance(value, dist.ProcessGroup) for value in defaults):
            function.__defaults__ = tuple(
                None if isinstance(value, dist.ProcessGroup) else value for value in defaults
            )
        keywords = getattr(function, "__kwdefaults__", None)
        if isinstance(keywords, dict):
            for name, value in list(keywords.items()):
                if isinstance(value, dist.ProcessGroup):
                    keywords[name] = None

    for module in list(sys.modules.values()):
        # type() and vars(), never isinstance or getattr: a lazy module's or a proxy's attribute
        # hooks import on access (seen: dbm.gnu's ``_gdbm``)
        if not issubclass(type(module), types.ModuleType):
            continue
        try:
            members = list(vars(module).values())
        except TypeError:
            continue
        for value in members:
            if type(value) is types.FunctionType:
                release(value)
            elif issubclass(type(value), type) and vars(value).get("__module__") == module.__name__:
                for member in list(vars(value).values()):
                    if type(member) in (staticmethod, classmethod):
                        member = member.__func__
                    if type(member) is types.FunctionType:
                        release(member)
