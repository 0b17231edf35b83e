"""Say it loudly when a training step's every episode failed.

Why: a failed episode is unscorable, so its reward is NaN and its advantage zero. When every
episode of a step fails (a video store that vanished, a bug in the engine that hits every
episode), the step learns nothing, and all a run showed was ``episode/error_rate`` at 1.0 in the
metrics. One warning per step, quoting the first error, makes the cause visible in the log.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import Any

__all__: list[str] = []  # nothing here is for the other rooms

logger = logging.getLogger(__name__)


def warn_if_every_episode_failed(records: Sequence[Any], step: int) -> str | None:
    """Log one warning when no episode of the step succeeded; return its text (None if any did).

    ``records`` are this rank's ``EpisodeRecord``s of the step. The warning counts the failures by
    ``error_kind`` (``engine``, ``video``, ``backend``) and quotes the first one.
    """
    if not records or any(getattr(r, "status", "ok") == "ok" for r in records):
        return None
    kinds = Counter(getattr(r, "error_kind", None) or "engine" for r in records)
    first = records[0]
    text = (
        f"step {step}: every one of the {len(records)} episodes failed "
        f"({', '.join(f'{k}: {n}' for k, n in sorted(kinds.items()))}), so the step has no "
        f"reward to learn from; first error (episode {first.id}, "
        f"kind {first.error_kind or 'engine'}): {first.error}"
    )
    logger.warning("%s", text)
    return text
