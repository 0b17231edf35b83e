"""``paravt make-tiny-model``: a random-init model to smoke-test an install without weights."""

from __future__ import annotations

import time
from pathlib import Path

import click

from paravt.cli.common import (
    check_output_folder,
    emit_json,
    force_option,
    json_option,
    quiet_model_loading,
)
from paravt.errors import UserError

__all__: list[str] = []  # nothing here is for the other rooms


def _earlier_tiny_model(folder: Path) -> bool:
    """A folder this command wrote before, and nothing else: every entry is a file its
    ``paravt_tiny.json`` lists (a trained checkpoint has no such record; a user's own file beside
    an earlier tiny model is not on the list, so that folder is refused too)."""
    from paravt.models.tiny import own_files

    ours = own_files(folder)
    return ours is not None and all(p.is_file() and p.name in ours for p in folder.iterdir())


@click.command("make-tiny-model")
@click.argument("out_dir", type=click.Path(file_okay=False))
@click.option(
    "--arch",
    default=None,
    help="Architecture: qwen3-vl or qwen2.5-vl (default: what --from-tokenizer's folder says, else qwen3-vl).",
)
@click.option("--seed", default=0, show_default=True, help="Seed of the random init.")
@click.option(
    "--preset",
    default="tiny",
    show_default=True,
    help="Size: tiny (tests, ~1 M parameters) or toy (learns the toy task, ~5.5 M).",
)
@click.option(
    "--from-tokenizer",
    "from_tokenizer",
    default=None,
    type=click.Path(),
    help="A folder with a real tokenizer and chat template (and optionally preprocessor_config.json): "
    "the tiny model is built around them.",
)
@click.option(
    "--chat-template",
    "chat_template",
    default=None,
    type=click.Path(),
    help="A chat template file (.jinja or chat_template.json) that replaces the folder's, e.g. to "
    "pair a template-only folder with another folder's tokenizer.",
)
@force_option
@json_option
def command(
    out_dir: str,
    arch: str | None,
    seed: int,
    preset: str,
    from_tokenizer: str | None,
    chat_template: str | None,
    force: bool,
    as_json: bool,
) -> None:
    """Build a tiny random Qwen-VL model, tokenizer, processor and chat template in OUT_DIR.

    Fully offline, in seconds. Reload it with transformers' AutoModelForImageTextToText and
    AutoProcessor; every paravt command takes it as --model OUT_DIR. With --from-tokenizer SRC the
    model is built around SRC's real tokenizer, chat template and processor settings, and a
    README in OUT_DIR says where each piece came from. OUT_DIR must be new, empty or an earlier
    tiny model; --force writes into any folder.
    """
    from paravt.models.tiny import ARCHS, PRESETS, make_tiny_model
    from paravt.models.tiny_source import detect_arch

    if chat_template is not None and from_tokenizer is None:
        raise UserError(
            "--chat-template needs --from-tokenizer (the folder whose tokenizer it pairs with)"
        )
    if arch is None:
        arch = (detect_arch(from_tokenizer) if from_tokenizer else None) or "qwen3-vl"
    if arch not in ARCHS:
        raise UserError(f"unknown --arch {arch!r}; choose one of: {', '.join(ARCHS)}")
    if preset not in PRESETS:
        raise UserError(f"unknown --preset {preset!r}; choose one of: {', '.join(PRESETS)}")
    check_output_folder(out_dir, "make-tiny-model", _earlier_tiny_model, force)
    quiet_model_loading()  # no "Writing model shards" bar: the result is one line
    t0 = time.perf_counter()
    path = make_tiny_model(
        out_dir,
        arch=arch,
        seed=seed,
        preset=preset,
        from_tokenizer=from_tokenizer,
        chat_template=chat_template,
    )
    result = {
        "path": str(path),
        "arch": arch,
        "preset": preset,
        "seed": seed,
        "from_tokenizer": from_tokenizer,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    if as_json:
        emit_json(result)
    else:
        click.echo(f"{preset} {arch} model written to {path} in {result['seconds']} s")
