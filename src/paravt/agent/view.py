"""One episode as a person reads it: the question, what the model saw, each turn and its calls,
the answer and how it was read, then timings and tokens.

``episode_view`` returns a rich renderable built only from an ``EpisodeRecord`` (its warnings,
such as frames decoded after damage in the video, under the overview line); the CLI prints
it on stdout (``paravt infer`` without ``--json``) or on stderr (``--trace`` beside ``--json``).
Lines are kept short (reasoning is cut to one line, errors to their first sentence's worth) so the
whole episode fits a 100-column terminal; colour is rich's choice, which is none off a terminal.
"""

from __future__ import annotations

from typing import Any

from paravt.agent.safe_text import visible
from paravt.grammar import parse_turn
from paravt.schema.questions import LETTERS

__all__ = ["VIEW_WIDTH", "episode_view"]

VIEW_WIDTH = 100  # the widest the episode view is drawn, whatever the terminal
REASONING_CHARS = 150
ANSWER_CHARS = 200
OVERVIEW_TIMES_SHOWN = 16

ANSWER_SOURCES = {
    "answer_tag": "read from the <answer> tag",
    "extracted": "extracted from the final text (no <answer> tag)",
    "forced": "forced: the tool rounds ran out",
}
STATUS_STYLE = {"ok": "green", "error": "red", "ignored": "yellow"}


def _answer_line(rec: Any):
    """``Final answer: X (how it was read)``, or ``none`` and why when nothing reads as one."""
    from rich.markup import escape
    from rich.text import Text

    if rec.prediction is None or not str(rec.prediction).strip():
        last = rec.turns[-1] if rec.turns else None
        why = "no <answer> tag, and nothing in the final text reads as one"
        if last is not None and last.finish_reason == "length":
            why += f"; the last turn stopped at its token limit ({last.generated_tokens} tokens)"
        return Text.from_markup(f"[bold]Final answer:[/] [yellow]none[/]  ({escape(why)})")
    how = ANSWER_SOURCES.get(rec.answer_source or "", rec.answer_source or "")
    return Text.from_markup(
        f"[bold]Final answer:[/] [bold cyan]{escape(_one_line(str(rec.prediction), ANSWER_CHARS))}[/]"
        f"  ({escape(how)})"
    )


def _one_line(text: str, limit: int) -> str:
    flat = visible(" ".join(str(text).split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def reasoning_of(text: str) -> str:
    """The turn's reasoning on one line: its ``<think>`` text, else its text without call blocks."""
    parsed = parse_turn(text)
    if parsed.think and parsed.think.strip():
        return parsed.think
    spans = sorted([c.span for c in parsed.calls] + [e.span for e in parsed.errors])
    kept, pos = [], 0
    for start, end in spans:
        if start >= pos:
            kept.append(text[pos:start])
            pos = end
    kept.append(text[pos:])
    return "".join(kept)


def _times(times: list[float]) -> str:
    shown = [f"{t:.1f}" for t in times]
    if len(shown) > OVERVIEW_TIMES_SHOWN:
        half = OVERVIEW_TIMES_SHOWN // 2
        shown = shown[:half] + ["…"] + shown[-half:]
    return ", ".join(shown) + " s" if shown else "none"


def _window(call: Any) -> str:
    if call.start is not None and call.end is not None:
        return f"{call.start:.1f}–{call.end:.1f} s"
    args = call.arguments or {}
    if args:
        s = args.get("start_time", args.get("start", "?"))
        e = args.get("end_time", args.get("end", "?"))
        return f"asked {s}–{e}"
    return _one_line(call.raw, 24) or "unparsed"


def _calls_table(calls: list[Any]):
    from rich.markup import escape
    from rich.table import Table

    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1, 0, 0), expand=False)
    table.add_column("call", no_wrap=True)
    table.add_column("window", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("detail", overflow="fold", max_width=60)
    for c in calls:
        style = STATUS_STYLE.get(c.status, "")
        if c.status == "ok":
            detail = f"{c.n_frames} frames"
            if c.summary is not None:
                detail += f": {escape(_one_line(c.summary, 120))}"
        elif c.status == "ignored":
            detail = "not run (answering turn)"
        else:
            detail = f"{escape(c.error_kind or 'error')}: {escape(_one_line(c.error or '', 220))}"
        table.add_row(
            f"  call {c.index}", escape(visible(_window(c))), f"[{style}]{c.status}[/]", detail
        )
    return table


def episode_view(rec: Any):
    """A rich renderable of one episode record (see the module docstring)."""
    from rich.console import Group
    from rich.markup import escape
    from rich.text import Text

    parts: list[Any] = []
    dur = (rec.video_meta or {}).get("duration")
    length = f" ({float(dur):.1f} s)" if dur else ""
    parts.append(
        Text.from_markup(
            f"[bold]{escape(visible(rec.id))}[/] · {escape(visible(rec.video))}{length} · {rec.mode}/{rec.evidence}"
        )
    )
    parts.append(
        Text.from_markup(
            f"[bold]Question[/] ({visible(rec.question_type)}): {escape(visible(rec.question))}"
        )
    )
    for i, opt in enumerate(rec.options or []):
        parts.append(Text(f"  {LETTERS[i]}. {_one_line(opt, VIEW_WIDTH - 6)}"))
    if rec.status == "error" and not rec.turns:
        parts.append(
            Text.from_markup(f"[red]error ({rec.error_kind}):[/] {escape(visible(rec.error))}")
        )
        return Group(*parts)
    parts.append(Text(f"Overview: K={rec.frames_k} frames at {_times(rec.overview_times)}"))
    for warning in rec.all_warnings():  # damage in the video, frames that could not be decoded
        parts.append(Text.from_markup(f"[yellow]warning:[/] {escape(visible(warning))}"))
    for turn in rec.turns:
        label = "forced answer" if turn.forced else f"turn {turn.index}"
        parts.append(
            Text.from_markup(
                f"[bold]{label}[/] · {turn.generated_tokens} tokens · {turn.generate_s:.2f} s"
                f" · {turn.finish_reason}"
            )
        )
        thought = _one_line(reasoning_of(turn.text), REASONING_CHARS)
        if thought:
            parts.append(Text(f"  {thought}", style="dim"))
        calls = [c for c in rec.calls if c.turn == turn.index]
        if calls:
            parts.append(_calls_table(calls))
    if rec.status == "error":
        parts.append(
            Text.from_markup(f"[red]error ({rec.error_kind}):[/] {escape(visible(rec.error))}")
        )
    else:
        parts.append(_answer_line(rec))
    if rec.gold is not None:
        parts.append(Text(f"Gold: {visible(rec.gold)}"))
    t, n = rec.timings, rec.tokens
    parts.append(
        Text(
            f"Time: {t.total_s:.2f} s (decode {t.decode_s:.2f}, preprocess {t.preprocess_s:.2f}, "
            f"generate {t.generate_s:.2f})"
        )
    )
    parts.append(
        Text(f"Tokens: {n.prompt} prompt, {n.generated} generated, {n.tool} tool, {n.image} image")
    )
    return Group(*parts)
