"""``paravt make-toy-task OUT --n N --seed S [--split train|eval]``: the synthetic needle task."""

from __future__ import annotations

import click

from paravt.cli.common import StepProgress, config_options, emit_json, json_option
from paravt.config import load_config

__all__: list[str] = []  # nothing here is for the other rooms


@click.command("make-toy-task")
@click.argument("out", type=str)
@click.option(
    "--n", "n", type=int, default=None, help="Number of videos (each gets mcq + tvg rows)."
)
@click.option("--seed", type=int, default=None, help="Seed: same seed and split, same task.")
@click.option("--split", default=None, help="train or eval (names the rows file and videos).")
@json_option
@config_options
def command(
    out: str,
    n: int | None,
    seed: int | None,
    split: str | None,
    as_json: bool,
    config_path: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Write N toy videos to OUT/videos, their questions to OUT/<split>.jsonl, and OUT/task.json.

    A coloured square shows for 3 s in a 120-180 s video: rarely in 4 overview frames, always in
    a parallel sweep of crop_video windows. Rows are read by `paravt train` (data.path, with
    data.video_root=OUT) and by `paravt eval --benchmark jsonl --data OUT --videos OUT`.
    """
    from paravt.toy.generate import make_toy_task
    from paravt.toy.task import ToyTaskConfig

    flags = {"out": out, "n": n, "seed": seed, "split": split}
    cfg = load_config(ToyTaskConfig, config_path, overrides, flags)
    with StepProgress("make-toy-task", cfg.n) as progress:
        result = make_toy_task(
            cfg, progress=lambda done, total: progress.update(done, f"{done} of {total} videos")
        )
    if as_json:
        emit_json(result)
        return
    vis = result["visibility"]
    shown = ", ".join(f"K={k}: {v['measured']:.0%}" for k, v in vis.items())
    click.echo(
        f"{result['videos']} videos, {result['rows']} rows in {out}/{result['rows_file']} "
        f"({result['generate_seconds']:.1f} s); "
        + (f"needle visible in the overview at {shown}" if shown else "visibility not measured")
    )
