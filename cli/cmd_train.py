"""``paravt train``: PARA-GRPO on TRL from a recipe (a YAML path or a packaged recipe name).

Works the same under ``python -m paravt.cli.main``, ``paravt``, ``torchrun`` and
``accelerate launch`` (DDP, FSDP and DeepSpeed settings go under ``trainer:`` as HF
TrainingArguments keys, e.g. ``--set trainer.deepspeed=ds.json``).
"""

from __future__ import annotations

import click

from paravt.cli.common import emit_json, json_option, stderr_console


@click.command("train")
@click.option(
    "--config",
    "config_path",
    required=True,
    metavar="RECIPE",
    help="Recipe YAML file, or a packaged recipe: paragrpo, vanilla_grpo, cpu-smoke.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override one key (dotted: data.video_root=..., trainer.max_steps=...); repeatable.",
)
@click.option(
    "--resume", is_flag=True, help="Continue from the newest checkpoint in the run folder."
)
@json_option
def command(config_path: str, overrides: tuple[str, ...], resume: bool, as_json: bool) -> None:
    """Train a video LMM with PARA-GRPO (multi-turn crop_video episodes, TRL loss)."""
    from paravt.train.run import load_command_config, run_training

    cfg = load_command_config(config_path, overrides)
    console = stderr_console()
    console.print(f"[bold]paravt train[/bold] → {cfg.output_dir} (model {cfg.model})")
    import contextlib
    import sys

    with contextlib.redirect_stdout(
        sys.stderr
    ):  # HF Trainer prints logs: stdout is for the result only
        summary = run_training(cfg, resume=resume, console=console)
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized() and dist.get_rank() != 0:
        return
    if as_json:
        emit_json(summary)
    else:
        click.echo(
            f"trained {summary['global_step']} steps; model in {summary['final_model']}; "
            f"metrics in {summary['metrics_file']}"
        )
