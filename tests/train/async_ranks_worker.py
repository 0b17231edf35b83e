"""One rank of ``test_async_ranks`` (torchrun, 2 gloo ranks, CPU): ``paravt train`` on the
cpu-smoke recipe at ``max_staleness = 2`` in server mode against the stand-in server the test
started (``standin_vllm``), with sharded weights (the strategy's ``--set`` keys in ``argv``).

``argv``: run folder, video folder, model folder, server URL, output folder, fault, then
``--set`` overrides. ``fault`` ``none``, or ``rank1`` (rank 1's sampling requests raise a paravt
error from the fifth on, which ends its producer, as an error of the run and not of one request
does: its rollout fails mid-run). Each rank writes ``rank{r}.json``: the steps it trained,
its weight pushes, the staleness of every consumed episode (the learner's version minus the
episode's oldest turn's), and its error (type, message) if the run failed.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from sharded_lockstep_worker import deepspeed_on_cpu, fsdp_on_cpu

FAULT = "injected sampling fault on rank 1"


def main() -> None:
    from gloo_ranks import SERVER_RANKS_WAITS

    from paravt.train.run import load_command_config, run_training

    fsdp_on_cpu()
    deepspeed_on_cpu()
    run_dir, videos, model, url, out, fault = sys.argv[1:7]
    cfg = load_command_config(
        "cpu-smoke",
        (
            f"output_dir={run_dir}", "data.path=builtin:smoke", f"data.video_root={videos}",
            f"model={model}", "trainer.use_vllm=true", "trainer.vllm_mode=server",
            f"trainer.vllm_server_base_url={url}", "trainer.vllm_check_weights=false",
            "trainer.vllm_importance_sampling_mode=token_truncate", "trainer.max_staleness=2",
            "trainer.max_steps=4", "trainer.save_steps=100", *SERVER_RANKS_WAITS,
            *sys.argv[7:],
        ),
    )  # fmt: skip
    seen: dict = {"ages": []}

    def attach(trainer) -> None:
        seen["trainer"] = trainer
        seen["rank"] = rank = trainer.accelerator.process_index
        if fault == "rank1" and rank == 1:
            client = trainer.vllm_generation.client
            send, count, lock = client.generate, [0], threading.Lock()

            def failing(*args, **kwargs):
                with lock:
                    count[0] += 1
                    n = count[0]
                if n >= 5:
                    from paravt.errors import ParavtError

                    raise ParavtError(FAULT)
                return send(*args, **kwargs)

            client.generate = failing

    try:
        summary = run_training(cfg, on_trainer=attach)
        seen["steps"] = summary["global_step"]
    except Exception as e:  # noqa: BLE001 - the test reads it
        seen["error"] = {"type": type(e).__name__, "message": str(e)}
    trainer = seen.pop("trainer", None)
    if trainer is not None:
        seen["pushed"] = list(trainer.vllm_generation.push.pushed)
    log = Path(run_dir, "episodes", f"rank{seen.get('rank', 0)}.jsonl")
    if log.is_file():
        for line in log.read_text().splitlines():
            e = json.loads(line)
            versions = [v for v in e.get("policy_versions", []) if v is not None]
            seen["ages"].append((e["step"], (e["step"] - 1 - min(versions)) if versions else None))
    return seen


if __name__ == "__main__":
    from paravt.train.launch.process_group import leave_process_group

    seen = main()
    leave_process_group()
    Path(sys.argv[5], f"rank{seen.get('rank', 'x')}.json").write_text(json.dumps(seen))
    if "error" in seen:
        sys.exit(1)
