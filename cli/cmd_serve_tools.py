"""``paravt serve-tools``: crop_video and video_info over MCP for agents and harnesses."""

from __future__ import annotations

import click

from paravt.cli.common import config_options
from paravt.config import load_config
from paravt.errors import UserError
from paravt.serve.config import ServeToolsConfig

__all__: list[str] = []  # nothing here is for the other rooms


@click.command("serve-tools")
@click.option(
    "--video-root",
    "video_roots",
    multiple=True,
    type=click.Path(file_okay=False),
    help="A folder videos may come from (repeatable); nothing outside the roots is opened.",
)
@click.option(
    "--write-entry",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write a launcher FILE holding these settings (start it as `python FILE`) and exit.",
)
@click.option(
    "--http",
    "http_port",
    type=int,
    default=None,
    help="Serve streamable HTTP on 127.0.0.1:PORT (at /mcp) instead of stdio.",
)
@click.option("--arch", default=None, help="Size rule of the frames: qwen3-vl or qwen2.5-vl.")
@config_options
def command(
    video_roots: tuple[str, ...],
    write_entry: str | None,
    http_port: int | None,
    arch: str | None,
    config_path: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Serve paravt's crop_video (the episode engine's frames for a window, as PNG images with
    their timestamps) and video_info over MCP stdio.

    A harness that starts servers as `python PATH` (lmms-eval's mcp_server_path) gets the file
    --write-entry writes. See docs/EVAL.md, "lmms-eval and other MCP clients".
    """
    flags = {"video_roots": list(video_roots) or None, "http_port": http_port, "arch": arch}
    cfg = load_config(ServeToolsConfig, config_path, overrides, flags)
    from paravt.serve.paths import VideoRoots

    VideoRoots.of(cfg.video_roots)  # every root checked before anything starts
    if write_entry:
        if cfg.http_port:
            raise UserError("--write-entry writes a stdio launcher: leave out --http")
        from paravt.serve.launcher import write_launcher

        path = write_launcher(cfg, write_entry)
        click.echo(str(path))
        click.echo(
            f"lmms-eval: --model async_openai --model_args ...,mcp_server_path={path}", err=True
        )
        return
    try:
        from paravt.serve.mcp_server import serve
    except ImportError as e:
        raise UserError(
            f"serve-tools needs the MCP SDK ({e}): pip install -c constraints.txt -e '.[mcp]'"
        ) from None
    serve(cfg)
