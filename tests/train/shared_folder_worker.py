"""One rank of ``test_multi_node_start_up`` (torchrun, gloo): two nodes simulated on one host,
each rank with its own view of the run folder.

``argv``: scenario folder, video folder, output folder. ``<scenario>/rank{r}`` is rank r's
``output_dir``; the test lays them out (a shared folder, a node that cannot see
``checkpoint-2``, a node with a folder of its own). Each scenario runs ``paravt train --resume``
as a library call up to the built trainer; ``rank{r}.json`` holds, per scenario, the error each
rank stopped with, or ``started``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


class _Started(Exception):
    """Raised once the trainer is built: the start-up checks passed."""


def _stop(trainer) -> None:
    raise _Started


def main() -> None:
    from paravt.errors import ParavtError
    from paravt.train.run import load_command_config, para_config, run_training

    scenarios, videos, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    result: dict = {}
    rank = 0
    for scenario in sorted(p for p in scenarios.iterdir() if p.is_dir()):
        overrides = (
            "data.path=builtin:smoke",  # rows over the videos folder, the same path on every rank
            f"data.video_root={videos}",
            "trainer.ddp_timeout=60",  # a rank stuck in a collective fails after a minute
        )
        cfg = load_command_config("cpu-smoke", overrides)
        rank = para_config(cfg).process_index
        cfg.output_dir = str(scenario / f"rank{rank}")  # this node's view of the run folder
        try:
            run_training(cfg, resume=True, on_trainer=_stop)
        except _Started:
            result[scenario.name] = "started"
        except ParavtError as e:
            result[scenario.name] = f"{type(e).__name__}: {e}"
    (out / f"rank{rank}.json").write_text(json.dumps(result))


if __name__ == "__main__":
    from paravt.train.launch.process_group import leave_process_group

    main()
    leave_process_group()  # gloo's threads stop before exit: an abort at exit fails the launch
