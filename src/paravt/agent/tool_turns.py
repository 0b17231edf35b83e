"""From one parsed turn to the calls that run and the tool messages that go back.

Two jobs, both pure: ``plan_calls`` decides, per call block of a turn, whether it runs or gets a
tool error (malformed block, over the ``max_parallel`` cap, extra call in ``sequential`` mode) —
never silently dropping one, and telling the model what happens next (another tool turn, or none
left, so it must answer); ``tool_message`` renders one call's outcome as a chat message with
role ``tool`` (frames as image parts then the text line, or the sub-agent's summary, or the error);
``reference_tool_message`` is the reference's layout of the same (``engine.tool_response_layout``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from paravt.schema.episodes import CallRecord

__all__: list[str] = []  # nothing here is for the other rooms

OVER_CAP = "over_cap"
SEQUENTIAL_EXTRA = "sequential_extra"


@dataclass
class PlannedCall:
    """A call block of a turn with its fate: ``run`` (arguments go to the tool) or ``error``."""

    record: CallRecord
    run: bool


def _not_run_advice(next_tool_turn: bool) -> str:
    """What the model can do about a call that did not run: only the caller knows whether another
    tool turn follows this one (the last round is followed by the forced answer)."""
    if next_tool_turn:
        return "Request it in your next turn if you still need it."
    return "No tool turn is left: your next turn must give the answer from the evidence you have."


def plan_calls(
    parsed: Any, turn: int, mode: str, max_parallel: int, *, next_tool_turn: bool
) -> list[PlannedCall]:
    """Calls and malformed blocks of ``parsed`` in text order, each marked run or error.

    ``next_tool_turn``: whether the model gets another tool turn after this one; the error of a
    call over the cap says so, or says that the next turn must answer."""
    items: list[tuple[int, Any, bool]] = [(c.index, c, True) for c in parsed.calls]
    items += [(e.index, e, False) for e in parsed.errors]
    items.sort(key=lambda x: x[0])
    cap = 1 if mode == "sequential" else max_parallel
    planned: list[PlannedCall] = []
    running = 0
    for index, item, is_call in items:
        if not is_call:
            rec = CallRecord(
                turn=turn,
                index=index,
                name=None,
                arguments=None,
                status="error",
                error=item.message,
                error_kind=item.kind,
                raw=item.raw,
            )
            planned.append(PlannedCall(rec, run=False))
            continue
        rec = CallRecord(
            turn=turn,
            index=index,
            name=item.name,
            arguments=dict(item.arguments),
            status="ok",
            raw=item.raw,
        )
        if running >= cap:
            rec.status = "error"
            if mode == "sequential":
                rec.error_kind = SEQUENTIAL_EXTRA
                rec.error = (
                    "Not executed: only one crop_video call runs per turn in this mode. "
                    + _not_run_advice(next_tool_turn)
                )
            else:
                rec.error_kind = OVER_CAP
                rec.error = (
                    f"Not executed: at most {max_parallel} crop_video calls run per turn and this "
                    f"was call {running + 1}. " + _not_run_advice(next_tool_turn)
                )
            running += 1
            planned.append(PlannedCall(rec, run=False))
            continue
        running += 1
        planned.append(PlannedCall(rec, run=True))
    return planned


def tool_message(text: str, n_images: int = 0) -> dict:
    """A ``role: tool`` chat message: ``n_images`` image parts, then the text."""
    parts: list[dict] = [{"type": "image"} for _ in range(n_images)]
    parts.append({"type": "text", "text": text})
    return {"role": "tool", "content": parts}


def reference_tool_message(text: str, n_images: int = 0) -> dict:
    """The reference layout of one call's result: a user message with the window's frames, then
    ``<tool_response>`` around the text (docs/PROTOCOL.md §1, frames evidence)."""
    parts: list[dict] = [{"type": "image"} for _ in range(n_images)]
    parts.append({"type": "text", "text": f"<tool_response>\n{text}\n</tool_response>"})
    return {"role": "user", "content": parts}


def truncate_summary(text: str, hit_limit: bool) -> str:
    """A sub-agent summary as it goes back to the main agent (`` [truncated]`` at the limit)."""
    text = text.strip()
    return text + " [truncated]" if hit_limit else text
