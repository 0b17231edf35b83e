"""One rank of ``test_ddp_timeout``: the cpu-smoke recipe's trainer settings on 2 gloo ranks,
``trainer.ddp_timeout`` short; rank 1 never joins the collective rank 0 enters.

``argv``: output folder, then ``trainer.ddp_timeout`` in seconds. Each rank writes
``rank{r}.json``: the world size and backend the trainer settings saw, and (rank 0) the type and
message of the error that ended its wait; rank 0 then re-raises it, so the launch fails.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rank_failure_worker import linger


def main(out: Path, seconds: str) -> None:
    import torch.distributed as dist

    from paravt.train.run import load_command_config, para_config

    overrides = (f"output_dir={out / 'run'}", f"trainer.ddp_timeout={seconds}")
    args = para_config(load_command_config("cpu-smoke", overrides))  # HF sets up devices here
    rank = int(args.process_index)
    seen = {"rank": rank, "world": int(args.world_size), "backend": dist.get_backend()}
    if rank == 1:  # stays out of the collective until rank 0 has recorded how its wait ended
        (out / "rank1.json").write_text(json.dumps(seen))
        linger(out / "rank0.json")
        return
    try:
        dist.barrier()
        seen["error"] = None
    except Exception as e:
        seen["error"] = {"type": type(e).__name__, "message": str(e)}
        raise
    finally:
        (out / "rank0.json").write_text(json.dumps(seen))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
