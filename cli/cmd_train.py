"""``paravt train``: PARA-GRPO on TRL from a recipe (a YAML path or a packaged recipe name).

Works the same under ``python -m paravt.cli.main``, ``paravt``, ``torchrun`` and
``accelerate launch`` (DDP, FSDP and DeepSpeed settings go under ``trainer:`` as HF
TrainingArguments keys, e.g. ``--set trainer.deepspeed=ds.json``).
"""

from __future__ import annotations

import os

import click

from paravt.cli.common import emit_json, json_option, stderr_console
from paravt.errors import ConfigError
from paravt.train.plan import fix_for, format_plan, plan_for_command


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
@click.option(
    "--plan",
    is_flag=True,
    help="Print the per-GPU memory plan (no weight is loaded) and exit; exit 2 if it cannot fit.",
)
@click.option(
    "--world-size",
    type=int,
    default=None,
    help="GPUs of the launch (default: the launcher's WORLD_SIZE, the accelerate config, 1).",
)
@click.option(
    "--strategy",
    type=click.Choice(["ddp", "fsdp2", "zero2", "zero3"]),
    default=None,
    help="Distributed strategy (default: read from trainer.deepspeed / trainer.fsdp).",
)
@click.option(
    "--accelerate-config",
    type=click.Path(dir_okay=False),
    default=None,
    help="The accelerate config file of the launch (strategy, processes, precision).",
)
@click.option("--gpu-memory-gb", type=float, default=80.0, show_default=True)
@json_option
def command(
    config_path: str,
    overrides: tuple[str, ...],
    resume: bool,
    plan: bool,
    world_size: int | None,
    strategy: str | None,
    accelerate_config: str | None,
    gpu_memory_gb: float,
    as_json: bool,
) -> None:
    """Train a video LMM with PARA-GRPO (multi-turn crop_video episodes, TRL loss)."""
    from paravt.train.run import leave_process_group, load_command_config, run_training

    if plan:
        _print_plan(
            load_command_config(config_path, overrides, check_trainer=False),
            world_size,
            strategy,
            accelerate_config,
            gpu_memory_gb,
            as_json,
        )
        return
    cfg = load_command_config(config_path, overrides)
    console = stderr_console()
    console.print(f"[bold]paravt train[/bold] → {cfg.output_dir} (model {cfg.model})")
    import contextlib
    import sys

    with contextlib.redirect_stdout(
        sys.stderr
    ):  # HF Trainer prints logs: stdout is for the result only
        summary = run_training(cfg, resume=resume, console=console)
    if not leave_process_group():
        return
    if as_json:
        emit_json(summary)
    else:
        click.echo(
            f"trained {summary['global_step']} steps; model in {summary['final_model']}; "
            f"metrics in {summary['metrics_file']}"
        )


def _print_plan(cfg, world_size, strategy, accelerate_config, gpu_gb, as_json) -> None:
    """The memory plan on stdout; a plan that cannot fit ends with its fix (exit 2)."""
    plan = plan_for_command(
        cfg,
        world_size=world_size,
        strategy=strategy,
        gpu_gb=gpu_gb,
        accelerate_config=accelerate_config,
        launcher_world_size=os.environ.get("WORLD_SIZE"),  # the launcher's fact, not a setting
    )
    if as_json:
        emit_json(plan.to_dict())
    else:
        click.echo(format_plan(plan))
    fix = fix_for(plan)
    if fix:
        raise ConfigError(
            f"the plan needs {plan.total / 1e9:.1f} GB a GPU, more than {gpu_gb:g} GB: {fix}"
        )
