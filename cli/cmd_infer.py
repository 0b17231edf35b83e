"""``paravt infer``: ask questions about a video with the episode engine.

``paravt infer VIDEO -q QUESTION [--option A ...]`` prints the episode for a person to read (turns,
calls, windows, answer, timings); ``--quiet`` prints the answer alone and ``--json`` the whole
episode record with the resolved config. ``-q -`` reads JSON lines of questions on stdin
(``{"question": ..., "options": [...], "type": "mcq", "video": ..., "id": ...}``) and answers them
in batches. ``--trace`` also shows the episode on stderr (beside ``--json``); ``--sheet PNG``
draws where the episode looked on the video's timeline.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.markup import escape

from paravt.agent.config import InferConfig, redacted_backend
from paravt.agent.safe_text import visible
from paravt.agent.view import VIEW_WIDTH, episode_view
from paravt.cli.common import (
    config_options,
    emit_json,
    json_option,
    quiet_model_loading,
    stderr_console,
    stdout_console,
)
from paravt.cli.flags import engine_flags, engine_options
from paravt.config import load_config, to_dict
from paravt.data.questions import RowError, parse_question
from paravt.errors import ItemsFailedError, UserError
from paravt.models.locate import locate_model, weights_error
from paravt.schema.episodes import EpisodeInput
from paravt.schema.questions import QUESTION_TYPES
from paravt.toy.demo import DEMO_MODEL, with_demo_defaults

__all__: list[str] = []  # nothing here is for the other rooms


def _flags(kw: dict) -> dict:
    backend = {"kind": kw.get("backend"), "model": kw.get("model"), "base_url": kw.get("base_url")}
    flags = {
        "question_type": kw.get("question_type"),
        "batch_size": kw.get("batch_size"),
        "backend": {k: v for k, v in backend.items() if v is not None},
        "engine": engine_flags(kw),
    }
    return {k: v for k, v in flags.items() if v not in (None, {})}


def _flag_question(video: str, question: str, options: tuple, qtype: str) -> EpisodeInput:
    """The one question the flags give (``-q TEXT``, ``--option``, ``--type``)."""
    opts = list(options) or None
    if opts is not None and len(opts) == 1:
        raise UserError(
            f"--option was given once ({opts[0]!r}): a multiple-choice question needs at "
            "least 2 options; give every choice with --option, or none for an open-ended "
            "question"
        )
    row = {"question": question, "options": opts, "question_type": qtype}
    try:
        q = parse_question(row)
    except RowError as e:
        raise UserError(f"-q: {e}") from None
    return EpisodeInput("q0", video, q.question, q.options, q.question_type)


def _stdin_questions(video: str, qtype: str) -> list[EpisodeInput]:
    """One episode input per JSON line on stdin (``-q -``): the question rows every reader
    shares (``paravt.data.questions``); ``video`` defaults to VIDEO, ``question_type`` to
    ``--type`` when the row has none, ``id`` to ``q<N>``. A line that is not a question stops
    the command (exit 2), naming the line."""
    inputs = []
    for n, line in enumerate(sys.stdin, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(
                f"stdin line {n} is not JSON ({e.msg}); write one JSON object per line"
            ) from None
        if isinstance(row, dict) and qtype != "auto" and "question_type" not in row:
            row = {"type": qtype, **row}
        try:
            q = parse_question(row)
        except RowError as e:
            raise UserError(f"stdin line {n}: {e}") from None
        inputs.append(
            EpisodeInput(
                id=q.id or f"q{len(inputs)}",
                video=q.video or video,
                question=q.question,
                options=q.options,
                question_type=q.question_type,
                frames_k=q.frames,
            )
        )
    if not inputs:
        raise UserError("-q - read no questions from stdin (one JSON object per line)")
    return inputs


def _questions(video: str, question: str, options: tuple, qtype: str) -> list:
    """The episode inputs: one from the flags, or one per JSON line on stdin (``-q -``)."""
    if question != "-":
        return [_flag_question(video, question, options, qtype)]
    return _stdin_questions(video, qtype)


def _sheet_paths(sheet: str | None, inputs: list) -> dict:
    """Where each episode's sheet goes: ``--sheet`` itself for one question, else
    ``STEM-ID.png`` beside it; every destination is checked before the model loads."""
    if not sheet:
        return {}
    import re

    from paravt.viz.episode_sheet import check_writable  # loads torch (paravt.video.sheet)

    base = check_writable(sheet)
    if len(inputs) == 1:
        return {inputs[0].id: base}
    return {
        inp.id: base.with_name(f"{base.stem}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', inp.id)}.png")
        for inp in inputs
    }


def _preflight(cfg: InferConfig, inputs: list, single: bool) -> list[str]:
    """Before the model loads: the model is found (a folder, the local cache, the Hub), every
    video opens, and every episode's first turn fits the model's context. Returns the warnings;
    bad input is a ``UserError`` naming it. Of stdin questions, one whose video cannot be used
    runs on as its own error record (the engine's one-line warning names it, and the command
    exits 1), unless none of them can run."""
    from paravt.agent.preflight import VideoChecks, check_budget, text_counters

    notes: list[str] = []
    arch = context = None
    if cfg.backend.kind == "hf":  # a mistyped --model: one line, before torch is imported
        located = locate_model(cfg.backend.model)
        arch, context = located.arch, located.context_length
        notes += [located.note] if located.note else []
    text = text_counters(cfg.backend.model, cfg.engine, arch) if arch and context else None
    _check_some_video_is_there(inputs)  # opening a video imports torch: a missing one first
    checks = VideoChecks()
    failed: list[str] = []
    for inp in inputs:
        try:
            facts = checks.check(inp.video)
        except UserError as e:
            if single:
                raise
            failed.append(f"question {inp.id}: {e}")
            continue
        k = inp.frames_k or cfg.engine.frames
        flag = "--frames" if single or inp.frames_k is None else f'question {inp.id}: "frames"'
        count = text(inp) if text is not None else None
        for w in check_budget(cfg.engine, facts, k, arch, context, frames_flag=flag, text=count):
            if w not in notes:
                notes.append(w)
    if failed and len(failed) == len(inputs):
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        raise UserError(f"no question can run: {failed[0]}{more}")
    return notes


def _check_some_video_is_there(inputs: list) -> None:
    """A batch none of whose videos is there stops with one line, before torch is imported."""
    missing = [i for i in inputs if not Path(str(i.video)).is_file()]
    if len(missing) == len(inputs):
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise UserError(
            f"no question can run: question {missing[0].id}: video not found: "
            f"{missing[0].video}{more}; pass the path of a video file"
        )


def _check_flags(cfg: InferConfig, video: str, question: str, quiet: bool, as_json: bool):
    """The flags that cannot go together, or a video path that is not there: one line, exit 2."""
    if question != "-" and not Path(video).is_file():
        raise UserError(f"video not found: {video} (pass the path of a video file)")
    if cfg.backend.kind == "openai" and cfg.backend.model == "":
        raise UserError("--backend openai needs --model (the name the server serves)")
    if quiet and as_json:
        raise UserError("--quiet and --json both choose what stdout holds: pass one of them")


def _load_backend(cfg: InferConfig, console):
    """The model behind the engine (a status line while it loads); weights that cannot be read
    are one line, and an ``openai`` server is checked before the first episode."""
    from paravt.backends.factory import check_serving, make_backend

    quiet_model_loading()
    with console.status(f"loading {cfg.backend.model} ({cfg.backend.kind})"):
        try:
            backend = make_backend(cfg.backend)
        except Exception as e:
            typed = weights_error(e, cfg.backend.model)
            if typed is None:
                raise
            raise typed from e
        check_serving(backend, cfg.engine)
    return backend


def _write_sheets(records, sheets: dict, console) -> None:
    for rec in records:
        if rec.id in sheets and rec.status == "ok":
            from paravt.viz.episode_sheet import write_episode_sheet  # loads torch

            console.print(f"sheet: {write_episode_sheet(rec, sheets[rec.id])}")


def _raise_if_failed(records) -> None:
    """Exit 1 when a question failed: each error is shown above (the view, ``--quiet``'s stderr
    line, the JSON record), so this line only counts them."""
    failed = [r for r in records if r.status != "ok"]
    if failed:
        ids = ", ".join(f"{r.id} ({r.error_kind or 'error'})" for r in failed[:5])
        raise ItemsFailedError(
            f"{len(failed)} of {len(records)} questions failed: {ids}"
            + (", ..." if len(failed) > 5 else "")
        )


def _emit(records, config, console, out, as_json: bool, trace: bool, quiet: bool, single: bool):
    """Stdout: the episode view (default), the answer alone (``--quiet``) or JSON records
    (``--json``); the view goes to stderr with ``--trace``, and errors always do."""
    for rec in records:
        if trace:
            console.print(episode_view(rec))
        elif as_json or quiet:  # the view shows them; stdout holds JSON or the answer alone
            for warning in rec.all_warnings():
                console.print(
                    f"[yellow]paravt: warning:[/] {escape(visible(rec.id))}: "
                    f"{escape(visible(warning))}"
                )
        if as_json:
            doc = {"config": config, "record": rec.to_dict()}
            if single:
                emit_json(doc)
            else:
                click.echo(json.dumps(doc, default=str))
        elif quiet:
            # the model's answer and an error's text are shown, never run (safe_text)
            ok = rec.status == "ok" and rec.prediction is not None
            click.echo(visible(rec.prediction) if ok else "")
            if rec.status != "ok":
                console.print(
                    f"[red]{escape(visible(rec.id))}: error:[/] {escape(visible(rec.error))}"
                )
        else:
            if not single:
                out.rule()
            out.print(episode_view(rec))


@click.command("infer")
@click.argument("video", type=click.Path(dir_okay=False))
@click.option(
    "-q", "--question", required=True, help="The question; '-' reads JSON lines from stdin."
)
@click.option(
    "--option",
    "options",
    multiple=True,
    help="A multiple-choice option (repeat, in order A, B, ...).",
)
@click.option(
    "--type",
    "question_type",
    type=click.Choice(["auto", *QUESTION_TYPES]),
    default=None,
    help="Question type (default: mcq with options, else oe).",
)
@click.option(
    "--model",
    help="Hub id or local model folder (hf), or the served model name (openai); toy-demo: the "
    "shipped toy model with the engine settings it was trained under (it answers multiple-choice "
    "questions about toy videos only).",
)
@click.option(
    "--backend",
    type=click.Choice(["hf", "openai"]),
    default=None,
    help="Model backend (default hf).",
)
@click.option("--base-url", help="OpenAI-compatible server URL, e.g. http://127.0.0.1:8000/v1.")
@engine_options
@click.option("--batch-size", type=int, help="Episodes run together (stdin questions; default 8).")
@click.option(
    "--trace", is_flag=True, help="Also show the episode (turns, calls, timings) on stderr."
)
@click.option("--quiet", is_flag=True, help="Print only the answer (one line per question).")
@click.option(
    "--sheet",
    type=click.Path(dir_okay=False),
    help="Write a PNG of the episode on the video's timeline (many questions: STEM-ID.png).",
)
@config_options
@json_option
def command(
    video,
    question,
    options,
    question_type,
    trace,
    quiet,
    sheet,
    config_path,
    overrides,
    as_json,
    **kw,
) -> None:
    """Answer QUESTION about VIDEO with parallel crop_video tool calls.

    Exit codes: 0 every question answered; 1 it ran, but a question failed (its error is in
    the output: the episode, --quiet's stderr line, the JSON record); 2 bad input, refused
    before anything ran (a flag, the model, the video, a budget past the model's context).
    """
    from paravt.agent.engine import EpisodeEngine

    kw["question_type"] = question_type
    cfg = load_config(InferConfig, config_path, overrides, with_demo_defaults(_flags(kw)))
    _check_flags(cfg, video, question, quiet, as_json)
    inputs = _questions(video, question, options, cfg.question_type)
    if kw.get("model") == DEMO_MODEL and any(i.question_type != "mcq" for i in inputs):
        click.echo(
            f"paravt: warning: --model {DEMO_MODEL} answers multiple-choice questions about toy "
            "videos only (it was trained to name the colour among the options); give --option "
            "for each choice",
            err=True,
        )
    sheets = _sheet_paths(sheet, inputs)  # a bad destination fails here, before the model loads
    if sheets and not cfg.engine.keep_images:
        raise UserError("--sheet draws the frames the model saw: drop engine.keep_images=false")
    console = stderr_console()
    with console.status(f"checking the model and {len({i.video for i in inputs})} video(s)"):
        warnings = _preflight(cfg, inputs, single=question != "-")
    for w in warnings:
        click.echo(f"paravt: warning: {w}", err=True)
    engine = EpisodeEngine(_load_backend(cfg, console), cfg.engine, keep_pixels=False)
    config = to_dict(cfg)
    config["backend"] = redacted_backend(config["backend"])  # the record never carries the key
    out = stdout_console(max_width=VIEW_WIDTH)
    records = []
    for start in range(0, len(inputs), cfg.batch_size):
        chunk = inputs[start : start + cfg.batch_size]
        label = f"questions {start + 1}-{start + len(chunk)} of {len(inputs)}"
        with console.status(label) as status:
            engine.progress = lambda line, label=label, status=status: status.update(
                f"{label}: {line}"
            )
            done = engine.run(chunk)
        records.extend(done)
        _emit(done, config, console, out, as_json, trace, quiet, single=len(inputs) == 1)
        _write_sheets(done, sheets, console)
    _raise_if_failed(records)
