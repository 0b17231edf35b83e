"""What Ctrl-C leaves of a ``train`` or ``sft`` run, said in one line (``Interrupted``).

Why: Ctrl-C printed only ``paravt: aborted``, and a run stopped before its first save left a
folder that ``--resume`` then answered with "no checkpoint". The interrupt now names the newest
checkpoint and the command that continues from it (the same command with ``--resume``), or says
that none was saved yet, so there is nothing to resume, and gives the command that starts the
run again (without ``--resume``; a fresh run into that folder is allowed, since it holds no
checkpoint).
"""

from __future__ import annotations

from pathlib import Path

from paravt.errors import Interrupted

__all__: list[str] = []  # nothing here is for the other rooms


def run_interrupted(run_dir: str | Path) -> Interrupted:
    """The ``Interrupted`` of a training run whose folder is ``run_dir``."""
    from paravt.train.launch.checkpoints import checkpoint_step, last_checkpoint  # transformers

    ckpt = last_checkpoint(Path(run_dir))
    if ckpt is None:
        return Interrupted(
            f"no checkpoint was saved in {run_dir} before the interrupt, so there is nothing to "
            "resume: the run starts over",
            add=(),
            drop=("--resume",),
        )
    return Interrupted(f"the newest checkpoint is {ckpt} (step {checkpoint_step(ckpt)})")
