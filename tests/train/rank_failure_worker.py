"""One rank of ``test_rank_failure``: ``paravt train`` on the cpu-smoke recipe on 2 gloo ranks,
where rank 1's rollout raises (its backend's second generate call: the episodes' second round).

``argv``: run folder, video folder, output folder, then ``--set`` overrides (the strategy). Each
rank writes ``rank{r}.json``: the type and message of the error that ended its training (none if
it finished), then re-raises it, so the launch ends as a failed ``paravt train`` would.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from sharded_lockstep_worker import fsdp_on_cpu

FAULT = "scripted fault on rank 1"


def main(out: Path) -> None:
    from paravt.train.run import load_command_config, run_training

    fsdp_on_cpu()
    run_dir, videos = sys.argv[1], sys.argv[2]
    overrides = (
        f"output_dir={run_dir}",
        f"data.video_root={videos}",
        "trainer.max_steps=1",
        "trainer.per_device_train_batch_size=2",
        "trainer.save_steps=100",
        "trainer.ddp_timeout=60",  # a rank stuck in a collective fails after a minute
        "engine.max_turns=2",
        *sys.argv[4:],
    )
    cfg = load_command_config("cpu-smoke", overrides)
    seen: dict = {"rank": None, "error": None}

    def per_rank(trainer) -> None:
        seen["rank"] = rank = trainer.accelerator.process_index
        if rank != 1:
            return
        backend = trainer._backend
        generate = backend.generate

        def faulty(requests):
            if backend.calls == 1:  # the first call (the forced tool turn) went through
                raise RuntimeError(f"{FAULT} (generate call {backend.calls + 1})")
            return generate(requests)

        backend.generate = faulty

    try:
        run_training(cfg, on_trainer=per_rank)
    except Exception as e:
        seen["error"] = {"type": type(e).__name__, "message": str(e), "at": time.time()}
        raise
    finally:
        (out / f"rank{seen['rank']}.json").write_text(json.dumps(seen))
        if seen["rank"] == 1:
            linger(out / "rank0.json")


def linger(other: Path) -> None:
    """Rank 1 stays up until rank 0 has recorded how its training ended, as a failed rank's
    process does when nothing tears the others down (no launcher agent watching both, another
    node, NCCL, which does not notice a peer's exit): rank 0 must learn of the failure from
    rank 1, not from its exit. Bounded, so a rank 0 that never records ends the launch too."""
    for _ in range(600):
        if other.exists():
            return
        time.sleep(0.5)


if __name__ == "__main__":
    from paravt.train.launch.process_group import leave_process_group

    main(Path(sys.argv[3]))
    leave_process_group()
