"""A resumed run logs, evaluates and saves at the steps its own config gives.

Why: transformers' ``Trainer`` sets ``state.logging_steps``, ``eval_steps`` and ``save_steps``
from the arguments, then on resume replaces the whole state with the checkpoint's
``trainer_state.json``, so a run resumed with a new ``save_steps`` (to keep more checkpoints for
a selection, say) saves at the old interval, with one warning line in the log. The callback
re-applies the arguments when training begins, after the state is loaded; a fresh run is
unchanged (the values are the ones already there).
"""

from __future__ import annotations

from transformers import TrainerCallback

__all__: list[str] = []  # nothing here is for the other rooms


class StepsFromArgs(TrainerCallback):
    """``state.compute_steps(args, max_steps)`` at ``on_train_begin``: the run's logging, eval
    and save intervals, whatever the checkpoint it resumed recorded."""

    def on_train_begin(self, args, state, control, **kwargs):
        state.compute_steps(args, state.max_steps)
