"""``paravt frames VIDEO``: the frames a model would see, their times, and a contact sheet."""

from __future__ import annotations

import click

from paravt.cli.common import config_options, emit_json, json_option
from paravt.config import load_config, to_dict
from paravt.destinations import check_file_destination
from paravt.errors import UserError
from paravt.video.config import FramesConfig

__all__: list[str] = []  # nothing here is for the other rooms


def parse_window_flag(text: str) -> dict:
    """``30:45`` (seconds), or ``01:30,01:45`` / ``01:30..01:45`` (clock times) -> tool arguments."""
    raw = text.strip()
    for sep in (",", ".."):
        if sep in raw:
            parts = raw.split(sep)
            break
    else:
        parts = raw.split(":") if raw.count(":") == 1 else []
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise UserError(
            f"--window {text!r}: use START:END in seconds (e.g. 30:45) or START,END with clock "
            "times (e.g. 01:30,01:45)"
        )
    return {"start_time": parts[0].strip(), "end_time": parts[1].strip()}


@click.command("frames")
@click.argument("video", type=str)
@click.option("-k", "k", type=int, default=None, help="Overview frame budget (default 16).")
@click.option("--mode", default=None, help="Overview sampling: exact, keyframe or qwen-vl-utils.")
@click.option(
    "--window",
    "windows",
    multiple=True,
    metavar="START:END",
    help="A crop_video window (repeatable); shows its frames instead of the overview.",
)
@click.option(
    "--workers",
    type=int,
    default=None,
    help="Decoder pool size (0: one per core, as infer and eval decode).",
)
@click.option(
    "--sheet", type=click.Path(dir_okay=False), default=None, help="Write a contact sheet PNG here."
)
@json_option
@config_options
def command(
    video: str,
    k: int | None,
    mode: str | None,
    windows: tuple[str, ...],
    workers: int | None,
    sheet: str | None,
    as_json: bool,
    config_path: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Show which frames of VIDEO a model sees: the overview, or the frames of crop_video windows.

    Prints each frame's time (seconds since the first frame) and size; --sheet draws them in a
    grid with each timestamp under its frame.
    """
    from dataclasses import asdict

    from paravt.video import VideoSource
    from paravt.video.sheet import contact_sheet

    cfg = load_config(
        FramesConfig, config_path, overrides, {"k": k, "mode": mode, "workers": workers}
    )
    window_args = [parse_window_flag(w) for w in windows]
    if sheet:  # before the decode: a sheet that cannot be written is one line, at once
        check_file_destination(sheet, "--sheet ")
    src = VideoSource(
        video,
        device=cfg.device,
        num_threads=cfg.decoder_threads,
        skip_disposable=cfg.skip_disposable,
    )
    result: dict = {"video": video, "meta": asdict(src.meta), "config": to_dict(cfg)}
    if window_args:
        groups, failed_windows = _windows(src, cfg, windows, window_args, result)
    else:
        groups, failed_windows = _overview(src, cfg, result), []
    if sheet and any(len(g[2]) for g in groups):
        title = f"{src.path}  ({src.meta.duration:.1f} s, {src.meta.average_fps:.2f} fps)"
        result["sheet"] = str(
            contact_sheet(
                groups, sheet, title, cfg.thumb_width, cfg.columns, src.meta.sample_aspect_ratio
            )
        )
    if as_json:
        emit_json(result)
    else:
        _print(result)
    if failed_windows:
        raise UserError(
            f"{len(failed_windows)} of {len(windows)} windows failed; first: {failed_windows[0]}"
        )


def _windows(src, cfg: FramesConfig, windows, window_args: list[dict], result: dict):
    """Decode the ``--window`` windows into ``result["windows"]``; returns the sheet's groups and
    one line per failed window."""
    from paravt.tools import WindowRequest, execute_windows

    # FramesConfig is a CropConfig: every window knob (skip_disposable ...) reaches the tool
    batch = execute_windows(
        [WindowRequest(src.path, a, key=w) for a, w in zip(window_args, windows, strict=True)],
        cfg,
        sources={src.path: src},
    )
    rows, groups, failed = [], [], []
    for j, (a, r) in enumerate(zip(window_args, batch.results, strict=True)):
        rows.append(
            {
                "window": windows[j],
                "arguments": a,
                "ok": r.ok,
                "message": r.message(),
                "start": r.start if r.ok else None,
                "end": r.end if r.ok else None,
                "times": [round(t, 6) for t in r.times],
                "size": list(r.frames.shape[2:]) if r.ok else None,
                "failed": r.failed,
                "damaged": r.damaged,
                "warnings": r.warnings,
                "error_kind": r.error_kind,
            }
        )
        if r.ok:
            groups.append((f"w{j + 1}", r.frames, r.times))
        else:
            failed.append(f"{windows[j]}: {r.error}")
    result["windows"] = rows
    result["stats"] = batch.stats.to_dict()
    return groups, failed


def _overview(src, cfg: FramesConfig, result: dict) -> list:
    """Sample the overview into ``result["overview"]``; returns the sheet's one group. It is
    decoded the way the episode engine decodes it (the same lanes on ``workers`` decoders), so
    what this shows is what a model is given, before the resize to its pixel budget."""
    from paravt.video.parallel import resolve_workers

    frames = src.overview(cfg.k, mode=cfg.mode, workers=resolve_workers(cfg.workers))
    result["overview"] = {
        "mode": cfg.mode,
        "k": cfg.k,
        "times": [round(t, 6) for t in frames.times],
        "indices": frames.indices,
        "size": list(frames.size or ()),
        "failed": frames.failed,
        "damaged": frames.damaged,
        "warnings": frames.warnings,
    }
    return [("", frames.data, frames.times)]


def _print(result: dict) -> None:
    """The result for a person: the frames' times, warnings, the sheet's path."""
    if "overview" in result:
        o = result["overview"]
        click.echo(
            f"overview ({o['mode']}, k={o['k']}): {len(o['times'])} frames of {o['size'][1]}x{o['size'][0]}"
        )
        click.echo("  " + ", ".join(f"{t:.2f}s" for t in o["times"]))
        for w in o["warnings"]:
            click.echo(f"  warning: {w}")
    for row in result.get("windows", []):
        click.echo(f"window {row['window']}: {row['message']}")
        if row["ok"]:
            click.echo("  " + ", ".join(f"{t:.2f}s" for t in row["times"]))
        for w in row["warnings"]:
            click.echo(f"  warning: {w}")
    if "sheet" in result:
        click.echo(f"contact sheet: {result['sheet']}")
