"""Launching a training run: everything between "a recipe was read" and "the trainer steps".

- ``plan``: the per-GPU memory plan (``paravt train --plan``) and the plain-DDP warning;
- ``process_group``: join a CPU launch's gloo group before HF builds its arguments, check that
  every launched process joined, leave it after a last barrier;
- ``checkpoints``: which checkpoint a run continues, agreed by every rank;
- ``shared_folder``: the check that every rank sees one run folder;
- ``resumed_steps``: a resumed run logs and saves at its own config's intervals, not the
  checkpoint's;
- ``startup``: one model path for all ranks, each rank's share of the data checks.

``paravt.train.run`` and ``paravt.train.sft.run`` compose these; the trainer core imports none of
them (the rollout's lockstep, which the trainer does use, is ``paravt.rollout.lockstep``).
"""

__all__: list[str] = []  # nothing here is for the other rooms
