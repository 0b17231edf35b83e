"""``paravt make-tiny-model``: a random-init model to smoke-test an install without weights."""

from __future__ import annotations

import time

import click

from paravt.cli.common import emit_json, json_option


@click.command("make-tiny-model")
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option(
    "--arch",
    default="qwen3-vl",
    show_default=True,
    help="Architecture: qwen3-vl or qwen2.5-vl.",
)
@click.option("--seed", default=0, show_default=True, help="Seed of the random init.")
@click.option(
    "--preset",
    default="tiny",
    show_default=True,
    help="Size: tiny (tests, ~1 M parameters) or toy (learns the toy task, ~5.5 M).",
)
@json_option
def command(out_dir: str, arch: str, seed: int, preset: str, as_json: bool) -> None:
    """Build a tiny random Qwen-VL model, tokenizer, processor and chat template in OUT_DIR.

    Fully offline, in seconds. Reload it with transformers' AutoModelForImageTextToText and
    AutoProcessor; every paravt command takes it as --model OUT_DIR.
    """
    from paravt.errors import UserError
    from paravt.testing.tiny import ARCHS, PRESETS, make_tiny_model

    if arch not in ARCHS:
        raise UserError(f"unknown --arch {arch!r}; choose one of: {', '.join(ARCHS)}")
    if preset not in PRESETS:
        raise UserError(f"unknown --preset {preset!r}; choose one of: {', '.join(PRESETS)}")
    t0 = time.perf_counter()
    path = make_tiny_model(out_dir, arch=arch, seed=seed, preset=preset)
    result = {
        "path": str(path),
        "arch": arch,
        "preset": preset,
        "seed": seed,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if as_json:
        emit_json(result)
    else:
        click.echo(f"{preset} {arch} model written to {path} in {result['seconds']} s")
