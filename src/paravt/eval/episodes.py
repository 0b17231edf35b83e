"""The bridge between evaluation samples and the episode engine.

``episode_input`` turns an ``EvalSample`` (plus any text the runner prepends, such as Video-MME
subtitles) into the engine's ``EpisodeInput``; ``row_of`` reads back, from an
``EpisodeRecord``, the ``ResultRow`` of what evaluation keeps per sample: the final answer, the raw final turn,
the error (an errored episode has no prediction and is never scored as an answer), tool usage
(calls executed, and calls attempted: every parsed call of every turn, whatever became of it)
and the overview times the model saw.
"""

from __future__ import annotations

from paravt.eval.results import ResultError, ResultRow, ToolUsage
from paravt.eval.samples import EvalSample
from paravt.schema.episodes import EpisodeInput, EpisodeRecord

__all__: list[str] = []  # nothing here is for the other rooms


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


def row_of(record: EpisodeRecord, sample: EvalSample, index: int, split: str) -> ResultRow:
    """What one sample's result line keeps from its episode record (not yet scored)."""
    error = None
    if record.status != "ok":
        message = str(record.error or "episode failed")
        error = ResultError(record.error_kind or error_kind(message), message)
    counts = record.tool_counts
    return ResultRow(
        id=sample.id,
        index=index,
        split=split,
        prediction=record.final_text,
        answer_text=None if error else record.prediction,
        error=error,
        forced=bool(record.forced),
        tools=ToolUsage(
            counts,
            # every call that parsed, whatever its fate (ran, over the cap, failed, ignored)
            attempted=sum(1 for c in record.calls if c.name is not None),
            turns=len(record.turns),
        ),
        overview_times=[round(float(t), 3) for t in record.overview_times],
        timing_s=float(record.timings.total_s or 0.0),
        warnings=record.all_warnings(),
        sample=sample.to_dict(),
    )
