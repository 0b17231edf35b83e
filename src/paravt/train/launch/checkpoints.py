"""Which checkpoint a run continues, agreed by every rank before anything is written.

A fresh run into a folder that holds checkpoints is refused (a later ``--resume`` would continue
the other run); ``agreed_checkpoint`` first checks that every rank sees the same run folder and
the same checkpoints (``paravt.train.launch.shared_folder``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paravt.errors import UserError
from paravt.train.launch.shared_folder import check_same_checkpoints, check_same_folder

__all__ = ["checkpoint_step", "last_checkpoint"]  # the CLI names what Ctrl-C kept


def last_checkpoint(run_dir: Path) -> Path | None:
    from transformers.trainer_utils import get_last_checkpoint

    if not run_dir.is_dir():
        return None
    found = get_last_checkpoint(str(run_dir))
    return Path(found) if found else None


def checkpoint_step(ckpt: Path) -> int:
    state = ckpt / "trainer_state.json"
    if state.is_file():
        return int(json.loads(state.read_text()).get("global_step", 0))
    return int(ckpt.name.rsplit("-", 1)[-1])


def checkpoint_to_resume(run_dir: Path, resume: bool) -> Path | None:
    """The checkpoint ``--resume`` continues, or None for a fresh run; refuses a fresh run into
    a folder that holds checkpoints (``UserError``)."""
    if resume:
        ckpt = last_checkpoint(run_dir)
        if ckpt is None:
            raise UserError(
                f"--resume: {run_dir} holds no checkpoint-N folder (a run stopped before its "
                "first save leaves none), so there is nothing to resume; run the same command "
                "without --resume to start it again"
            )
        return ckpt
    # A fresh run would clear the logs but keep an earlier run's checkpoints: a later --resume
    # would continue that other run, and save_total_limit could rotate away the new ones.
    stale = last_checkpoint(run_dir)
    if stale is not None:
        raise UserError(
            f"output_dir={run_dir} already holds {stale.name} from an earlier run: pass "
            "--resume to continue it, or set a new output_dir (--set output_dir=...)"
        )
    return None


def agreed_checkpoint(run_dir: Path, resume: bool, args: Any) -> Path | None:
    """``checkpoint_to_resume`` once every rank is known to see the same run folder and the same
    checkpoints (``paravt.train.launch.shared_folder``); a mismatch stops every rank alike."""
    world = int(args.world_size)
    if world > 1:
        from accelerate.utils import gather_object

        rank = int(args.process_index)
        check_same_folder(run_dir, rank, world, gather_object)
        check_same_checkpoints(run_dir, last_checkpoint(run_dir), gather_object)
    return checkpoint_to_resume(run_dir, resume)
