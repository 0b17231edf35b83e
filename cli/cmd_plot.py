"""``paravt plot RUN_DIR... --out fig.png``: the training-dynamics figure (format reward and κ)."""

from __future__ import annotations

import click
from paravt.cli.common import emit_json, json_option


@click.command("plot")
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option(
    "--out", "out_path", required=True, type=click.Path(dir_okay=False), help="PNG to write."
)
@json_option
def command(run_dirs: tuple[str, ...], out_path: str, as_json: bool) -> None:
    """Plot R_fmt and tool-call rate κ over steps, one line per run folder."""
    from paravt.train.plot import plot_runs

    info = plot_runs(list(run_dirs), out_path)
    if as_json:
        emit_json(info)
    else:
        click.echo(
            f"wrote {info['out']} ({', '.join(f'{r}: {n} steps' for r, n in info['steps'].items())})"
        )
