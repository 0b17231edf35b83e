"""``paravt bench-kernels``: time pixel_values vs the torch reference and transformers' processors."""

from __future__ import annotations

import click

from paravt.cli.common import (
    StepProgress,
    config_options,
    emit_json,
    json_option,
    print_table,
    stderr_console,
)
from paravt.config import load_config, to_dict

__all__: list[str] = []  # nothing here is for the other rooms


def _table(report: dict):
    from rich.table import Table

    table = Table(
        title=f"pixel_values on {report['device_name']} ({report['frames_source'] if isinstance(report['frames_source'], str) else 'decoded frames'})"
    )
    for col in (
        "workload",
        "layout",
        "frames",
        "paravt ms",
        "reference ms",
        "HF torchvision ms",
        "HF PIL ms",
        "x HF tv",
        "x HF PIL",
    ):
        table.add_column(col, justify="right" if "ms" in col or col.startswith("x") else "left")
    for row in report["workloads"]:
        ms, sp = row["ms"], row.get("speedup", {})

        def fmt(v):
            return "-" if v is None else f"{v:.1f}"

        def ratio(v):
            return "-" if v is None else f"{v:.2f}x"

        table.add_row(
            row["name"],
            row["layout"],
            str(row["frames"]),
            f"{fmt(ms['paravt'])} ({row['paravt_resize']})",
            fmt(ms.get("reference_float")),
            fmt(ms.get("hf_torchvision")),
            fmt(ms.get("hf_pil")),
            ratio(sp.get("hf_torchvision_over_paravt")),
            ratio(sp.get("hf_pil_over_paravt")),
        )
    return table


@click.command("bench-kernels")
@click.option(
    "--device",
    type=click.Choice(["cpu", "cuda"]),
    default=None,
    help="Where to run pixel_values and the torchvision baselines (default cpu).",
)
@config_options
@json_option
def command(
    device: str | None, config_path: str | None, overrides: tuple[str, ...], as_json: bool
) -> None:
    """Time paravt.kernels.pixel_values against the torch reference and HF processors.

    Workloads: a tool batch (5 windows x 16 720p frames) and a 64-frame overview, each in the
    image and the video layout. Ratios are baseline time / paravt time in the same process.
    Real frames: --set videos=a.mp4,b.mp4 (default: generated 720p frames).
    """
    from paravt.kernels.bench import BenchKernelsConfig, run_bench

    cfg = load_config(BenchKernelsConfig, config_path, overrides, {"device": device})
    # run_bench's steps: the frames, each workload in each layout, the parity check
    steps = 1 + 2 * len(cfg.layouts) + (1 if cfg.parity else 0)
    with StepProgress("bench-kernels", steps) as progress:
        seen: list[str] = []

        def step(text: str) -> None:
            progress.update(len(seen), text)  # the steps before this one are done
            seen.append(text)

        report = run_bench(cfg, progress=step)
        progress.update(steps, "done")
    report = {"config": to_dict(cfg), **report}
    if as_json:
        stderr_console().print(_table(report))
        emit_json(report)
    else:
        print_table(_table(report))
