"""A run that stops cleanly: asked to (SIGTERM), or when its vLLM servers stay away.

- ``StopRequest``: while a run trains, SIGTERM (a scheduler's preemption, ``kill``) is recorded
  instead of killing the process; ``reason()`` says it. The vLLM server pool reads it too: a
  rollout in progress (or waiting out an outage) ends at its next request with
  ``RolloutStopped``, and the run saves the last finished step (``save_after_failure``), without
  waiting for the step's rollout to end.
- ``StopAtStepEnd``: at the end of every optimizer step, when any rank was asked to stop (the
  flag is all-gathered, so every rank stops after the same step), HF Trainer saves a checkpoint
  and ends training there: a signal that came after the rollout (the loss, the optimizer step).
- ``save_after_failure``: after a rollout error the run cannot go on from — no vLLM server within
  the outage budget, an episode past its deadline, a failed weight push, another rank's such
  failure — every rank saves ``checkpoint-N`` of the last finished step (HF's own checkpoint:
  weights, optimizer, scheduler, RNG, data position), so ``--resume`` loses no optimizer step.

Either way ``paravt train`` ends with one line (``RunStopped``, exit 2) that says what happened,
which checkpoint holds the run, and that ``--resume`` continues it.
"""

from __future__ import annotations

import logging
import signal
import threading
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from paravt.errors import RankFailedError, UserError
from paravt.rollout.producer_process import ProducerProcessError
from paravt.rollout.vllm_server_client import VLLMServerError
from paravt.rollout.weight_push import WeightPushError

__all__: list[str] = []  # nothing here is for the other rooms

logger = logging.getLogger(__name__)

#: the rollout errors after which the run saves and stops (``save_after_failure``)
STOPPING_ERRORS = (VLLMServerError, WeightPushError, ProducerProcessError)


class RunStopped(UserError):
    """The run stopped before its last step, with a checkpoint to resume from."""


class StopRequest:
    """SIGTERM recorded while the ``with`` block runs (main thread only: elsewhere Python cannot
    take signals, and the default action stays)."""

    def __init__(self) -> None:
        self.why: str | None = None
        self._previous: Any = None

    def reason(self) -> str | None:
        return self.why

    def _handle(self, signum: int, _frame: Any) -> None:
        name = signal.Signals(signum).name
        if self.why is None:
            logger.warning(
                "%s received: the run saves a checkpoint and stops (a second %s: at once)",
                name,
                name,
            )
            self.why = name
            return
        signal.signal(signum, signal.SIG_DFL)  # a second one: the default action
        signal.raise_signal(signum)

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
            self._previous = None


class StopAtStepEnd(TrainerCallback):
    """Save and end training at a step's end once any rank was asked to stop (module doc)."""

    def __init__(self, request: StopRequest, world_size: int):
        self.request, self.world_size = request, int(world_size)
        self.stopped_at: int | None = None

    def on_step_end(self, args, state, control, **kwargs):
        asked = self.request.reason() is not None
        if self.world_size > 1:  # every rank stops after the same step
            from accelerate.utils import gather_object

            asked = any(gather_object([asked]))
        if asked:
            control.should_save = True
            control.should_training_stop = True
            self.stopped_at = int(state.global_step)
        return control


def stopping_error(error: BaseException) -> bool:
    """True for the rollout errors after which the run saves and stops (module doc)."""
    if isinstance(error, STOPPING_ERRORS):
        return True
    names = {c.__name__ for c in STOPPING_ERRORS}
    names |= {"VLLMOutageError", "ServerUnreachable", "RolloutStopped"}
    return isinstance(error, RankFailedError) and error.kind in names


def save_after_failure(trainer: Any, run_dir: Path, error: BaseException) -> RunStopped:
    """Save the last finished step's checkpoint (every rank: a collective under sharding) and
    return the one-line error that ends the run."""
    step = int(trainer.state.global_step)
    what = " ".join(str(error).split())
    if step == 0:
        return RunStopped(f"{what}. No step had finished, so no checkpoint was saved: start again")
    trainer._save_checkpoint(trainer.model, trial=None)
    return RunStopped(
        f"{what}. The run stopped after step {step}, saved as {run_dir / f'checkpoint-{step}'}: "
        "run the same command with --resume to continue it"
    )


def stopped_by_request(reason: str, step: int, run_dir: Path) -> RunStopped:
    return RunStopped(
        f"stopped by {reason} after step {step}, saved as {run_dir / f'checkpoint-{step}'}: run "
        "the same command with --resume to continue it"
    )
