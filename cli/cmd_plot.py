"""``paravt plot RUN_DIR... --out fig.png [--metric KEY ...]``: training curves of one or more runs.

Without ``--metric`` it draws the paper's training-dynamics figure (format reward and κ); each
``--metric`` adds a panel of that logged key instead. Every run is one line in every panel.
"""

from __future__ import annotations

import click

from paravt.cli.common import emit_json, json_option

__all__: list[str] = []  # nothing here is for the other rooms


@click.command("plot")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option(
    "--out", "out_path", required=True, type=click.Path(dir_okay=False), help="PNG to write."
)
@click.option(
    "--metric",
    "metrics",
    multiple=True,
    metavar="KEY",
    help="A logged metric to draw (repeat: reward/acc, tools/kappa, frames/k_mean, loss, ...).",
)
@json_option
def command(
    run_dirs: tuple[str, ...], out_path: str, metrics: tuple[str, ...], as_json: bool
) -> None:
    """Plot training metrics over steps (default: R_fmt and κ), one line per run folder."""
    from paravt.train.plot import plot_runs

    info = plot_runs(list(run_dirs), out_path, metrics=list(metrics) or None)
    if as_json:
        emit_json(info)
    else:
        click.echo(
            f"wrote {info['out']} ({', '.join(f'{r}: {n} steps' for r, n in info['steps'].items())})"
        )
