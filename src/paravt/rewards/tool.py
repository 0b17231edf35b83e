"""R_tool: the tool reward, read from what the engine executed — never from the text.

Why from execution: the reference decided "executed" by looking for ``<tool_response>`` in the
completion, which only a model hallucinating tool output can produce. The engine knows how many
calls parsed and how many returned frames; that is what is rewarded.

Levels (docs/PROTOCOL.md §5.4; docs/train/REWARDS.md):

* 0 with no call the parser read;
* ``tool_parseable`` (0.1, the parse credit) when calls were read (a known tool name with an
  arguments object) but none executed: arguments that fail validation (``{}``, a start past the
  video's end), a call over the ``max_parallel`` cap, a window that failed to decode. That is all
  a call that cannot run ever earns;
* ``tool_executed`` (0.3) when at least one call executed: its window decoded and went back to
  the model;
* plus ``tool_correct_bonus`` (0.5) when the answer is correct **and a call executed**. Correct
  means R_acc ≥ ``tool_correct_threshold`` (0.5; the reference pays at R_acc > 0), and for an
  open-ended answer also exactly the gold's content words (``paravt.rewards.answers.bonus_earned``;
  ``compose`` passes it as ``correct``).

*Choice*: the correct-answer bonus needs an executed call (``tool_bonus_requires_call=True``).
Without any call it would be a second accuracy reward that pays for *not* using the tool, which is
the collapse PARA-GRPO fights; with a call that merely parsed it paid +0.5 for
``crop_video`` with ``"arguments": {}`` — a call that never shows a frame. The result is clipped to
[0, 1].
"""

from __future__ import annotations

from paravt.errors import deprecated
from paravt.rewards.config import RewardConfig
from paravt.schema.tools import ToolCounts

__all__ = ["tool_reward"]


def __getattr__(name: str) -> object:
    """``ToolExecutionSummary``, the old name of ``ToolCounts`` (the reward's copy of the
    engine's counts), still answers, with TRL's deprecation rule."""
    if name == "ToolExecutionSummary":
        deprecated("paravt.rewards.ToolExecutionSummary", "use paravt.schema.ToolCounts")
        return ToolCounts
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def tool_reward(
    execution: object, acc: float, cfg: RewardConfig | None = None, correct: bool | None = None
) -> float:
    """R_tool ∈ [0, 1] from an episode's ``ToolCounts`` (or anything :meth:`ToolCounts.of`
    reads) and the episode's R_acc. ``correct`` decides the bonus when given (the composition
    passes :func:`~paravt.rewards.answers.bonus_earned`); otherwise R_acc ≥ the threshold."""
    cfg = cfg or RewardConfig()
    ex = ToolCounts.of(execution)
    if ex.executed_ok > 0:
        level = cfg.tool_executed
    elif ex.parseable_calls > 0:
        level = cfg.tool_parseable
    else:
        level = 0.0
    if correct is None:
        try:
            correct = float(acc) >= cfg.tool_correct_threshold
        except (TypeError, ValueError):
            correct = False
    # the bonus needs a call that ran: a refused or failed call never saw the video
    if correct and (ex.executed_ok > 0 or not cfg.tool_bonus_requires_call):
        level += cfg.tool_correct_bonus
    return min(1.0, max(0.0, level))
