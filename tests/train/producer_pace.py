"""A learner made slower than its sampler, for the bounded-staleness tests.

Why: whether the rollout producer gets a step ahead of the learner depends on how fast each
side runs, and so on the host's load: a loaded CI host once ran every rollout of a
``max_staleness = 2`` run after its own step's push (staleness 0 at all four steps), and the
test that rollouts ran ahead failed. With this callback each step but the last ends only once
the producer has finished a rollout the learner has not taken yet; that rollout ran entirely
under weights pushed before the next step's push, so the next step learns from tokens at
least one version old, on any host.
"""

from __future__ import annotations

import time

from transformers import TrainerCallback

__all__ = ["learner_waits_for_producer"]


def learner_waits_for_producer(trainer, timeout_s: float = 180.0) -> TrainerCallback:
    """A callback for ``trainer`` (a PARA-GRPO trainer at ``max_staleness >= 1``)."""

    class WaitForProducer(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            if state.global_step >= state.max_steps:
                return
            producer = trainer._async.producer
            deadline = time.monotonic() + timeout_s
            while producer.ahead() < 1:
                assert time.monotonic() < deadline, "the producer never got a step ahead"
                time.sleep(0.05)

    return WaitForProducer()
