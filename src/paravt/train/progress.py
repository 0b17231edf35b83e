"""The live training line on stderr: step, reward terms, κ, mean K and seconds per step.

A ``TrainerCallback`` of its own (the trainer's reward code is untouched): it reads the same
logged values ``MetricsJsonl`` writes, so what a person watches is what the metrics file holds.
On a terminal the line is redrawn in place (rich ``Live``); off a terminal (a log file, CI) one
plain line is printed per logging step. Only the main process draws.
"""

from __future__ import annotations

import time
from typing import Any

from transformers import TrainerCallback

__all__ = ["ProgressLine"]


def _num(logs: dict, key: str) -> float | None:
    value = logs.get(key)
    return float(value) if isinstance(value, (int, float)) else None


def progress_line(step: int, max_steps: int, logs: dict, s_per_step: float | None) -> str:
    """One line of training progress from a logging step's values (missing values are left out)."""
    parts = [f"step {step}/{max_steps}" if max_steps > 0 else f"step {step}"]
    total = _num(logs, "reward/total")
    # every reward term the step logged (reward/<term>, in the reward's own order), total apart
    terms = " ".join(
        f"{key.removeprefix('reward/')} {v:.2f}"
        for key in logs
        if key.startswith("reward/")
        and key != "reward/total"
        and (v := _num(logs, key)) is not None
    )
    if total is not None or terms:
        head = f"R {total:.3f}" if total is not None else "R"
        parts.append(f"{head} ({terms})" if terms else head)
    if (kappa := _num(logs, "tools/kappa")) is not None:
        parts.append(f"κ {kappa:.2f}")
    if (k := _num(logs, "frames/k_mean")) is not None:
        parts.append(f"K {k:.1f}")
    if (loss := _num(logs, "loss")) is not None:
        parts.append(f"loss {loss:.4f}")
    if s_per_step is not None:
        parts.append(f"{s_per_step:.1f} s/step")
    return " · ".join(parts)


class ProgressLine(TrainerCallback):
    """Draws ``progress_line`` on ``console`` (a rich console bound to stderr) at every log."""

    def __init__(self, console: Any, clock=time.monotonic):
        self.console = console
        self.clock = clock
        self.live = None
        self.lines: list[str] = []  # every line shown, in order
        self._last: tuple[int, float] | None = None  # (step, time) at the previous log
        self._s_per_step: float | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        self._last = (int(state.global_step), self.clock())
        if self.console.is_terminal:
            from rich.live import Live

            self.live = Live("", console=self.console, refresh_per_second=4, transient=False)
            self.live.start()

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs or "train_runtime" in logs:
            return
        now, step = self.clock(), int(state.global_step)
        if self._last is not None and step > self._last[0]:
            self._s_per_step = (now - self._last[1]) / (step - self._last[0])
        self._last = (step, now)
        line = progress_line(step, int(state.max_steps or 0), logs, self._s_per_step)
        self.lines.append(line)
        if self.live is not None:
            self.live.update(line)
        else:
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)

    def on_train_end(self, args, state, control, **kwargs):
        if self.live is not None:
            self.live.stop()
            self.live = None
