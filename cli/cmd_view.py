"""``paravt view RUN... -o DIR``: a static site to browse eval and training runs' episodes."""

from __future__ import annotations

from pathlib import Path

import click

from paravt.cli.common import (
    check_output_folder,
    config_options,
    emit_json,
    force_option,
    json_option,
)
from paravt.config import load_config
from paravt.viewer.config import ViewConfig

__all__: list[str] = []  # nothing here is for the other rooms

#: what a site holds (paravt.viewer.site.write_site): a folder of these names only is rewritten
SITE_ENTRIES = {"index.html", "compare.html", "assets", "episodes", "frames"}


def _earlier_site(folder: Path) -> bool:
    """A site this command wrote before: its index, its own script, and nothing else."""
    names = {p.name for p in folder.iterdir()}
    return (folder / "assets" / "viewer.js").is_file() and names <= SITE_ENTRIES


@click.command("view")
@click.argument("runs", nargs=-1, type=click.Path(file_okay=False))
@click.option("-o", "--out", default=None, type=click.Path(file_okay=False), help="Site folder.")
@click.option("--thumb-width", type=int, default=None, help="Width of the stored frames (160).")
@force_option
@json_option
@config_options
def command(
    runs: tuple[str, ...],
    out: str | None,
    thumb_width: int | None,
    force: bool,
    as_json: bool,
    config_path: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Write a self-contained site of the episodes of RUN folders (`paravt eval --out` folders,
    training output folders) to DIR: an index to filter, sort and compare, and one page per
    episode. Open DIR/index.html in a browser; no server is needed. DIR must be new, empty or an
    earlier site; --force writes into any folder."""
    from paravt.viewer.site import write_site

    flags = {"runs": list(runs) or None, "out": out, "thumb_width": thumb_width}
    cfg = load_config(ViewConfig, config_path, overrides, flags)
    if cfg.out:
        check_output_folder(cfg.out, "view", _earlier_site, force)
    result = write_site(cfg)
    if as_json:
        emit_json(result)
        return
    for r in result["runs"]:
        click.echo(f"{r['name']}: {r['episodes']} episodes ({r['kind']} run)")
    for note in result["notes"]:
        click.echo(f"note: {note}")
    if result["missing_frames"]:
        click.echo(f"{result['missing_frames']} frames could not be read: shown as placeholders")
    click.echo(f"open file://{result['index']}")
