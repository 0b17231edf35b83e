"""One rank of ``test_sharded_lockstep`` (run under torchrun, gloo): ``paravt train`` on the
cpu-smoke recipe with sharded weights, where the two ranks run differently shaped episodes.

``argv``: run folder, video folder, output folder, then ``--set`` overrides (the strategy).
Rank 0 runs two-round episodes whose windows go to sub-agents (``evidence=subagent``, their
trajectories in the loss); rank 1 runs one-round episodes with another token budget and no
sub-agents. So rank 0 makes more generate calls, in other budget groups, and holds more loss rows.
Each rank writes ``rank{r}.json``: its episodes' turns, generate calls, filler rows sampled, loss
rows per rollout, and the gloo threads still running once it has left the process group.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from dataclasses import replace
from pathlib import Path


def fsdp_on_cpu() -> None:
    """accelerate forms FSDP only on accelerator devices: on CPU it prepares the model for DDP
    (``MULTI_CPU``) and drops the FSDP plugin. This shim keeps the plugin on CPU, so the real
    trainer path (accelerate's FSDP2 preparation, every forward a gloo collective) runs here."""
    from accelerate.state import AcceleratorState, PartialState
    from accelerate.utils import DistributedType

    original = AcceleratorState.__init__

    def init(self, *args, fsdp_plugin=None, **kwargs):
        original(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
        if fsdp_plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
            self.distributed_type = DistributedType.FSDP
            self.fsdp_plugin = fsdp_plugin
            PartialState._shared_state["distributed_type"] = DistributedType.FSDP

    AcceleratorState.__init__ = init


def deepspeed_on_cpu() -> None:
    """Two things keep DeepSpeed's ranks apart on a machine without an accelerator.

    accelerate (``PartialState``) lets ``deepspeed.comm.init_distributed`` form the process group
    (DeepSpeed's CPU accelerator picks gloo) but finds no backend name of its own off the GPU, so
    it reports one process, index 0, on every rank, and each trains alone. The shim names gloo
    there. And DeepSpeed's torch backend JIT-compiles a shared-memory all-reduce op (C++) when
    the group starts on CPU, minutes on a busy 2-core host the first time; only its inference
    all-reduce uses it, so the shim skips the build. The rest is DeepSpeed's own ZeRO engine."""
    # by module name: ``deepspeed.comm``'s attribute ``torch`` is the torch package itself
    try:
        ds_torch = importlib.import_module("deepspeed.comm.torch")
    except ImportError:  # no DeepSpeed: the FSDP runs need nothing here
        return
    from accelerate.state import PartialState

    ds_torch.build_shm_op = lambda: None
    original = PartialState._prepare_backend

    def prepare(self, cpu=False, sagemaker_dp=False, backend=None):
        backend, kind = original(self, cpu, sagemaker_dp, backend)
        deepspeed = os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() == "true"
        if backend is None and not cpu and deepspeed and "LOCAL_RANK" in os.environ:
            backend = "gloo"
        return backend, kind

    PartialState._prepare_backend = prepare


def shard_share(model) -> float | None:
    """This rank's share of the model's parameter elements: about 1/N when ZeRO-3 partitions
    them over N ranks; None when they are not DeepSpeed's."""
    params = list(model.parameters())
    if not params or not all(hasattr(p, "ds_numel") for p in params):
        return None
    return sum(p.ds_tensor.numel() for p in params) / sum(p.ds_numel for p in params)


def main() -> dict:
    from paravt.train.run import load_command_config, run_training

    fsdp_on_cpu()
    deepspeed_on_cpu()

    run_dir, videos = sys.argv[1], sys.argv[2]
    overrides = (
        f"output_dir={run_dir}",
        f"data.video_root={videos}",
        "trainer.max_steps=1",
        "trainer.per_device_train_batch_size=2",
        "trainer.save_steps=100",
        "trainer.ddp_timeout=60",  # a rank stuck in a collective fails after a minute
        "trainer.subagent_in_loss=true",
        "engine.evidence=subagent",
        "engine.subagent_max_tokens=4",
        "engine.max_turns=2",
        *sys.argv[4:],
    )
    cfg = load_command_config("cpu-smoke", overrides)
    seen: dict = {"rows": [], "turns": []}

    def per_rank(trainer) -> None:
        seen["rank"] = rank = trainer.accelerator.process_index
        if rank == 1:
            a = trainer.para_args
            a.engine = replace(a.engine, evidence="frames", max_turns=1, max_new_tokens=8)
        trainer.keep_last_rollout = True
        original = trainer._generate_and_score_completions

        def wrapped(inputs):
            output = original(inputs)
            seen["rows"].append(int(output["completion_ids"].size(0)))
            seen["strategy"] = str(trainer.accelerator.distributed_type)
            seen["wrapped"] = type(trainer.model_wrapped).__name__
            seen["fsdp"] = bool(trainer.is_fsdp_enabled)
            seen["world"] = int(trainer.accelerator.num_processes)
            seen["shard_share"] = shard_share(trainer.model_wrapped)
            seen["lockstep"] = trainer._backend.lockstep is not None
            seen["turns"].extend(len(r.turns) for r in trainer.last_rollout["records"])
            seen["subagents"] = sum(len(r.subagents or []) for r in trainer.last_rollout["records"])
            return output

        trainer._generate_and_score_completions = wrapped
        seen["trainer"] = trainer

    summary = run_training(cfg, on_trainer=per_rank)
    backend = seen.pop("trainer")._backend
    seen.update(
        steps=summary["global_step"],
        calls=backend.calls,
        fillers=getattr(backend, "filler_batches", None),
    )
    return seen


if __name__ == "__main__":
    from gloo_ranks import gloo_threads

    from paravt.train.launch.process_group import leave_process_group

    seen = main()
    leave_process_group()  # gloo's threads stop before exit: an abort at exit fails the launch
    seen["gloo_threads_after_leaving"] = gloo_threads()
    Path(sys.argv[3], f"rank{seen['rank']}.json").write_text(json.dumps(seen))
