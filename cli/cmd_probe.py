"""``paravt probe VIDEO``: the metadata paravt's decoder reads from a video (what the tool uses)."""

from __future__ import annotations

import click

from paravt.cli.common import config_options, emit_json, json_option
from paravt.config import load_config, to_dict
from paravt.video.config import ProbeConfig

__all__: list[str] = []  # nothing here is for the other rooms


def shown(value) -> str:
    """A metadata value for a person: a float to 3 decimals at most (29.97, not
    29.970029970029973; 120.0 stays 120.0); ``--json`` keeps the full value."""
    if isinstance(value, float):
        text = f"{value:.3f}".rstrip("0")
        return text + "0" if text.endswith(".") else text
    return str(value)


@click.command("probe")
@click.argument("video", type=str)
@click.option("--device", default=None, help="Decode device: cpu (default) or cuda.")
@json_option
@config_options
def command(
    video: str,
    device: str | None,
    as_json: bool,
    config_path: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Print VIDEO's stream metadata as decoded: duration, fps, frame count, size, keyframes.

    Times are seconds since the first frame; duration, fps and frame count come from a scan of the
    stream's packets, not from the container header.
    """
    from dataclasses import asdict

    from paravt.video import VideoSource

    cfg = load_config(ProbeConfig, config_path, overrides, {"device": device})
    src = VideoSource(video, device=cfg.device)
    meta = asdict(src.meta)
    result = {
        "video": video,
        "meta": meta,
        "warnings": list(src.open_warnings),
        "config": to_dict(cfg),
    }
    if as_json:
        emit_json(result)
        return
    for key, value in meta.items():
        click.echo(f"{key:>14}: {shown(value)}")
    for w in src.open_warnings:
        click.echo(f"warning: {w}", err=True)
