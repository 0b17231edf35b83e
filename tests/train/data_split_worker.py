"""One rank of ``test_start_up_probes_once_and_every_rank_keeps_the_same_rows`` (torchrun, gloo).

``argv``: video folder, run folder, output folder. Rank 1 cannot read one video (a transient
read error, injected where the probe opens it); each rank records which videos it probed and the
rows it kept, in ``rank{r}.json``.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace

FLAKY = "mediabunny__trim-buck-bunny.webm"


def main() -> None:
    from accelerate import PartialState

    import paravt.video
    from paravt.data import validate
    from paravt.train.run import DataConfig, training_rows

    videos, run_dir, out = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    state = PartialState(cpu=True, timeout=timedelta(seconds=60))  # a hang fails within a minute
    rank = state.process_index
    if rank == 1:
        source = paravt.video.VideoSource

        def flaky(path, *args, **kwargs):
            if path.endswith(FLAKY):
                raise OSError(f"{path}: Input/output error")
            return source(path, *args, **kwargs)

        paravt.video.VideoSource = flaky
    probed = []
    probe = validate._probe

    def counted(path):
        probed.append(Path(path).name)
        return probe(path)

    validate._probe = counted
    args = SimpleNamespace(process_index=rank, world_size=state.num_processes)
    rows, report = training_rows(DataConfig(video_root=videos), run_dir, args)
    result = {
        "rows": [r.id for r in rows],
        "skipped": [Path(s.video).name for s in report.skipped],
        "probed": probed,
    }
    (out / f"rank{rank}.json").write_text(json.dumps(result))
    state.wait_for_everyone()


if __name__ == "__main__":
    from paravt.train.launch.process_group import leave_process_group

    main()
    leave_process_group()  # gloo's threads stop before exit: an abort at exit fails the launch
