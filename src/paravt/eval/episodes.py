"""The bridge between evaluation samples and the episode engine.

``episode_input`` turns an ``EvalSample`` (plus any text the runner prepends, such as Video-MME
subtitles) into the engine's ``EpisodeInput``; ``outcome_of`` reads back, from an
``EpisodeRecord``, only what evaluation keeps per sample: the final answer, the raw final turn,
the error (an errored episode has no prediction and is never scored as an answer), tool usage
(calls executed, and calls attempted: every parsed call of every turn, whatever became of it)
and the overview times the model saw.
"""

from __future__ import annotations

from typing import Any

from paravt.agent.records import EpisodeInput
from paravt.eval.samples import EvalSample


def episode_input(sample: EvalSample, question: str, frames_k: int | None = None):
    return EpisodeInput(
        id=sample.id,
        video=sample.video,
        question=question,
        options=list(sample.options) if sample.question_type == "mcq" else None,
        question_type=sample.question_type,
        frames_k=frames_k,
        answer=sample.answer,
        meta={"split": sample.split},
    )


def error_kind(message: str) -> str:
    """Coarse class of an episode error for the summary: ``backend``, ``video`` or ``engine``.

    Fallback for records without a typed ``error_kind`` (e.g. re-scored old result files): reads
    the engine's error messages (``generation failed …``, ``cannot read video …``,
    ``no overview frame …``); anything else is ``engine`` — the documented kind, which
    ``--retry-errors`` retries like an engine crash.
    """
    text = (message or "").lower()
    if text.startswith("generation failed") or "backend" in text:
        return "backend"
    if text.startswith(("cannot read video", "no overview frame")):
        return "video"
    return "engine"


def outcome_of(record: Any) -> dict:
    """What one sample's result line keeps from its episode record."""
    counts = getattr(record, "tool_counts", None)
    calls = getattr(record, "calls", None) or []
    turns = getattr(record, "turns", None) or []
    status = getattr(record, "status", "ok")
    error = None
    if status != "ok":
        message = str(getattr(record, "error", None) or "episode failed")
        kind = getattr(record, "error_kind", None) or error_kind(message)
        error = {"kind": kind, "message": message}
    return {
        "prediction": getattr(record, "final_text", None),
        "answer_text": None if error else getattr(record, "prediction", None),
        "error": error,
        "forced": bool(getattr(record, "forced", False)),
        "tools": {
            "executed": int(getattr(counts, "executed_ok", 0) or 0),
            # every call that parsed, whatever its fate (ran, over the cap, failed, ignored)
            "attempted": sum(1 for c in calls if getattr(c, "name", None) is not None),
            "parseable": int(getattr(counts, "parseable_calls", 0) or 0),
            "malformed": int(getattr(counts, "parse_errors", 0) or 0),
            "tool_errors": int(getattr(counts, "errors", 0) or 0),
            "turns": len(turns),
        },
        "overview_times": [
            round(float(t), 3) for t in (getattr(record, "overview_times", None) or [])
        ],
        "timing_s": float(getattr(getattr(record, "timings", None), "total_s", 0.0) or 0.0),
    }
