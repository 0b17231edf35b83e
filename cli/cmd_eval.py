"""``paravt eval``: run a benchmark split, re-score results, merge shards.

``paravt eval --benchmark NAME --data DIR --videos DIR --out DIR [...]`` runs (or, with
``--resume``, continues) an evaluation; ``paravt eval run …`` is the same. ``paravt eval score
RESULTS.jsonl`` re-scores predictions without a model; ``paravt eval merge DIR… --out DIR``
combines shards; ``paravt eval report RUN…`` puts runs side by side (Markdown, LaTeX, CSV) with
the relative gain over a baseline. Results go to stdout (a table, or JSON with ``--json``), progress to stderr.
"""

from __future__ import annotations

from pathlib import Path

import click

from paravt.cli.common import (
    command_line,
    config_options,
    emit_json,
    json_option,
    print_table,
    quiet_model_loading,
    stderr_console,
)
from paravt.cli.flags import ENGINE_FLAGS, engine_flags
from paravt.config import load_config
from paravt.errors import ItemsFailedError, UserError
from paravt.eval.adapters import split_names
from paravt.eval.compare import compare_runs
from paravt.eval.config import SHEETS_OF, EvalConfig
from paravt.eval.judge import make_judge
from paravt.eval.merge import merge_runs
from paravt.eval.metrics import DEFAULT_VARIANT, VARIANTS
from paravt.eval.report import REPORT_FORMATS, format_comparison, summary_table
from paravt.eval.rescore import rescore
from paravt.eval.results import write_json_atomic
from paravt.toy.demo import with_demo_defaults

__all__: list[str] = []  # nothing here is for the other rooms


def _run_options(fn):
    opts = [
        click.option("--benchmark", help=f"Split to evaluate: {', '.join(split_names())}."),
        click.option(
            "--data", type=click.Path(), help="Folder (or file) with the native annotations."
        ),
        click.option("--videos", type=click.Path(), help="Folder with the benchmark's videos."),
        click.option(
            "--out", type=click.Path(), help="Output folder (results JSONL, summary JSON)."
        ),
        click.option(
            "--model",
            help="Hub id or local folder (hf), or served model name (openai); toy-demo: the "
            "shipped toy model with the engine settings it was trained under.",
        ),
        click.option(
            "--backend",
            type=click.Choice(["hf", "openai", "scripted"]),
            default=None,
            help="hf (local transformers), openai (HTTP server), scripted (replay --script).",
        ),
        click.option("--base-url", help="OpenAI-compatible server URL (openai backend)."),
        click.option(
            "--script", type=click.Path(), help="Completions file for --backend scripted."
        ),
        *(row.option() for row in ENGINE_FLAGS),
        click.option(
            "--subtitles",
            type=click.Choice(["frames", "all", "none"]),
            default=None,
            help="Video-MME subtitles: lines at the sampled frames (default), all, none.",
        ),
        click.option("--limit", type=int, help="Only the first N samples of the split."),
        click.option("--shard", help="Run shard I of N (I/N, from 0); merge with `eval merge`."),
        click.option("--batch-size", type=int, help="Episodes per engine batch."),
        click.option("--resume", is_flag=True, default=None, help="Continue the run in --out."),
        click.option(
            "--retry-errors",
            is_flag=True,
            default=None,
            help="With --resume: run again the samples whose backend or engine failed, or "
            "whose video was missing.",
        ),
        click.option(
            "--variant",
            type=click.Choice(list(VARIANTS)),
            default=None,
            help="Scoring variant shown as the headline (all are in the summary).",
        ),
        click.option("--judge-url", help="OpenAI-compatible endpoint judging open-ended answers."),
        click.option("--judge-model", help="Model name at --judge-url."),
        click.option(
            "--sheets",
            type=int,
            default=None,
            help="Write the episode sheets (PNG) of N episodes to OUT/sheets/.",
        ),
        click.option(
            "--sheets-of",
            type=click.Choice(list(SHEETS_OF)),
            default=None,
            help="Which episodes get sheets: the first N (default) or N failures.",
        ),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return config_options(json_option(fn))


def _flags(kw: dict) -> dict:
    backend_choice = kw.get("backend")
    backend = {"model": kw.get("model"), "base_url": kw.get("base_url")}
    if backend_choice in ("hf", "openai"):
        backend["kind"] = backend_choice
    flags = {
        "benchmark": kw.get("benchmark"),
        "data": kw.get("data"),
        "videos": kw.get("videos"),
        "out": kw.get("out"),
        "script": kw.get("script"),
        "subtitles": kw.get("subtitles"),
        "limit": kw.get("limit"),
        "shard": kw.get("shard"),
        "batch_size": kw.get("batch_size"),
        "resume": kw.get("resume"),
        "retry_errors": kw.get("retry_errors"),
        "variant": kw.get("variant"),
        "sheets": kw.get("sheets"),
        "sheets_of": kw.get("sheets_of"),
        "judge_base_url": kw.get("judge_url"),
        "judge_model": kw.get("judge_model"),
        "backend": {k: v for k, v in backend.items() if v is not None},
        "engine": engine_flags(kw),
    }
    return {k: v for k, v in flags.items() if v not in (None, {})}


def _print(summary: dict, as_json: bool) -> None:
    if as_json:
        emit_json(summary)
        return
    print_table(summary_table(summary))


def _progress_hook(console):
    """A callback for the runner that drives a rich progress bar with the running score."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    state: dict = {}

    def hook(event: str, running, total: int = 0, done: int = 0) -> None:
        if event == "start":
            progress.start()
            state["task"] = progress.add_task(running.text(), total=total, completed=done)
        else:
            progress.update(state["task"], advance=1, description=running.text())

    hook.stop = progress.stop  # type: ignore[attr-defined]
    return hook


def _do_run(config_path, overrides, as_json, **kw) -> None:
    from paravt.eval.runner import (
        run_eval,  # the run's engine (models, video) waits for the command
    )

    cfg = load_config(EvalConfig, config_path, overrides, with_demo_defaults(_flags(kw)))
    if kw.get("backend") == "scripted" and not cfg.script:
        raise UserError("--backend scripted needs --script FILE (the completions to replay)")
    if kw.get("backend") in ("hf", "openai") and cfg.script:
        raise UserError(f"--script is only for --backend scripted, not {kw['backend']}")
    # the bar below is the run's progress line, not transformers' own: quieted when the model
    # is about to load, so the checks that need no model library come back without it
    quiet = quiet_model_loading if cfg.backend.kind == "hf" and not cfg.script else None
    hook = _progress_hook(stderr_console()) if cfg.progress else None
    try:
        summary = run_eval(cfg, progress=hook, before_load=quiet)
    finally:
        if hook is not None:
            hook.stop()
    _print(summary, as_json)
    if "nothing_scored" in summary:  # every row is kept; say why none scored, and how on
        raise ItemsFailedError(_nothing_scored(summary, cfg))


def _nothing_scored(summary: dict, cfg: EvalConfig) -> str:
    """The one line of a run none of whose questions could be scored: why (the summary's
    ``nothing_scored``), what is kept, and the command that runs the retryable ones again."""
    from paravt.eval.runner import RETRYABLE_KINDS, RunPaths

    kinds = summary["metrics"]["error_kinds"]
    line = f"{summary['nothing_scored']}; the rows are kept in {RunPaths.for_config(cfg).results}"
    if any(kind in RETRYABLE_KINDS for kind in kinds):
        again = command_line(add=("--resume", "--retry-errors"))
        fix = " (with --videos fixed)" if "video_missing" in kinds else ""
        line += f"; run them again{fix} with: {again}"
    return line


@click.group(name="eval", invoke_without_command=True)
@_run_options
@click.pass_context
def command(ctx: click.Context, config_path, overrides, as_json, **kw) -> None:
    """Evaluate on a long-video benchmark from its native files (see `eval run --help`).

    Every sample gets one JSON line in OUT/results.jsonl (errors included and counted);
    OUT/summary.json holds all three scoring variants and the complete protocol.

    Exit codes: 0 the run finished (errored questions are counted results); 1 no question could
    be scored (the last line says why and how to run them again); 2 bad input, refused before
    the run; 130 Ctrl-C (every scored row kept; the last line names the command that continues).
    """
    if ctx.invoked_subcommand is not None:
        return
    if not kw.get("benchmark") and not config_path:
        raise click.UsageError(
            "name the split with --benchmark NAME (or a --config FILE that does), or use a "
            "subcommand: run, score, merge, report (paravt eval --help lists the options)",
            ctx,
        )
    _do_run(config_path, overrides, as_json, **kw)


@command.command(name="run")
@_run_options
def run_cmd(config_path, overrides, as_json, **kw) -> None:
    """Run (or --resume) an evaluation of one split."""
    _do_run(config_path, overrides, as_json, **kw)


@command.command(name="score")
@click.argument("results", type=click.Path())
@click.option(
    "--variant",
    type=click.Choice(list(VARIANTS)),
    default=DEFAULT_VARIANT,
    help="Scoring variant shown as the headline (all are in the summary).",
)
@click.option("--judge-url", help="OpenAI-compatible endpoint judging open-ended answers.")
@click.option("--judge-model", help="Model name at --judge-url.")
@click.option(
    "--out", "out_file", type=click.Path(dir_okay=False), help="Also write the summary JSON here."
)
@json_option
def score_cmd(results, variant, judge_url, judge_model, out_file, as_json) -> None:
    """Re-score RESULTS (a results JSONL) without running a model."""
    summary = rescore(results, variant, judge=make_judge(judge_url, judge_model))
    if out_file:
        write_json_atomic(out_file, summary)
    _print(summary, as_json)


@command.command(name="merge")
@click.argument("inputs", nargs=-1, required=True, type=click.Path())
@click.option(
    "--out", required=True, type=click.Path(file_okay=False), help="Folder for the merged output."
)
@click.option(
    "--allow-missing", is_flag=True, help="Count absent samples as errors instead of failing."
)
@json_option
def merge_cmd(inputs, out, allow_missing, as_json) -> None:
    """Merge shard outputs (their --out folders or run*.json files) into one run."""
    summary = merge_runs([Path(p) for p in inputs], Path(out), allow_missing=allow_missing)
    _print(summary, as_json)


@command.command(name="report")
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option(
    "--format",
    "fmt",
    type=click.Choice(list(REPORT_FORMATS)),
    default="markdown",
    help="Table format: markdown (default), latex (booktabs tabular) or csv (fractions).",
)
@click.option(
    "--variant",
    type=click.Choice(list(VARIANTS)),
    default=DEFAULT_VARIANT,
    help="Scoring variant whose numbers are compared.",
)
@click.option(
    "--baseline",
    metavar="RUN",
    help="Run (folder or its name among RUNS) the relative gain is measured against.",
)
@json_option
def report_cmd(runs, fmt, variant, baseline, as_json) -> None:
    """Put eval RUNS side by side: one row per run, one column per split and metric.

    A run is an `eval --out` folder, or a folder of them (one per split); all runs must cover
    the same splits. With --baseline, the last column is the mean relative gain over the
    splits' headline metrics.
    """
    cmp = compare_runs(list(runs), variant, baseline)
    if as_json:
        emit_json(cmp.to_dict())
    else:
        click.echo(format_comparison(cmp, fmt))
