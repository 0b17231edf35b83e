"""An episode's tool calls, counted: the one record the engine fills and the rewards, the training
metrics and an eval result line read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ToolCounts"]


@dataclass
class ToolCounts:
    """An episode's tool calls, counted from what executed, not from text: the one record the
    episode engine fills (``EpisodeRecord.tool_counts``), R_tool and R_fmt read, the training
    metrics log and an eval result line shows (``paravt.eval.results.ToolUsage`` is a view of
    it). It lives on the schema floor so the engine, the rewards and eval import one definition
    rather than copying it under other names."""

    parseable_calls: int = 0  # calls the parser read (known tool, arguments object), run or not
    executed_ok: int = 0  # calls whose window decoded and came back to the model
    errors: int = 0  # calls that ended in a tool error (parse, argument or decode)
    parse_errors: int = 0  # blocks that did not parse as a call
    over_cap: int = 0  # calls beyond max_parallel, answered with a tool error

    @property
    def called(self) -> bool:
        """Whether a call exists: one parsed or executed. R_tool and R_fmt's think-before-call
        term share this one notion."""
        return self.executed_ok > 0 or self.parseable_calls > 0

    @classmethod
    def of(cls, counts: object) -> ToolCounts:
        """From a ``ToolCounts`` (itself), or a mapping or object with these field names (a
        results line read back, an older record)."""
        if counts is None:
            return cls()
        if isinstance(counts, cls):
            return counts
        if isinstance(counts, dict):
            return cls(**{f: _count(counts.get(f, 0)) for f in _FIELDS})
        return cls(**{f: _count(getattr(counts, f, 0)) for f in _FIELDS})


_FIELDS = ("parseable_calls", "executed_ok", "errors", "parse_errors", "over_cap")


def _count(value: Any) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError, OverflowError):
        return 0
