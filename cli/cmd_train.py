"""``paravt train``: PARA-GRPO on TRL from a recipe (a YAML path or a packaged recipe name).

Works the same under ``python -m paravt.cli.main``, ``paravt``, ``torchrun`` and
``accelerate launch`` (DDP, FSDP and DeepSpeed settings go under ``trainer:`` as HF
TrainingArguments keys, e.g. ``--set trainer.deepspeed=ds.json``).
"""

from __future__ import annotations

import os

import click

from paravt.cli.common import emit_json, json_option, quiet_training_libraries, stderr_console
from paravt.cli.interrupted_runs import run_interrupted
from paravt.destinations import check_folder_destination
from paravt.errors import ConfigError
from paravt.models.locate import locate_model
from paravt.schema.run_summary import RunSummary
from paravt.train.launch.plan import fix_for, format_plan, plan_for_command
from paravt.train.launch.step_time import DEFAULT_GPU, GPUS, format_step_time, gpu_of, step_time

__all__: list[str] = []  # nothing here is for the other rooms


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
@click.option(
    "--gpu",
    type=click.Choice(sorted(GPUS)),
    default=DEFAULT_GPU,
    show_default=True,
    help="The GPU of the plan: its memory and the step-time estimate's bf16 peak and bandwidth.",
)
@click.option(
    "--gpu-memory-gb",
    type=float,
    default=None,
    help="GPU memory of the plan (default: the --gpu's, 80 for h100).",
)
@click.option(
    "--vllm-server-gpus",
    type=int,
    default=1,
    show_default=True,
    help="GPUs of the vLLM server in server mode (its tensor-parallel size), for the estimate.",
)
@json_option
def command(
    config_path: str,
    overrides: tuple[str, ...],
    resume: bool,
    plan: bool,
    world_size: int | None,
    strategy: str | None,
    accelerate_config: str | None,
    gpu: str,
    gpu_memory_gb: float | None,
    vllm_server_gpus: int,
    as_json: bool,
) -> None:
    """Train a video LMM with PARA-GRPO (multi-turn crop_video episodes, TRL loss)."""
    from paravt.train.launch.process_group import leave_process_group
    from paravt.train.run import load_command_config, run_training

    if plan:
        _print_plan(
            load_command_config(config_path, overrides, check_trainer=False),
            world_size,
            strategy,
            accelerate_config,
            gpu,
            gpu_memory_gb,
            vllm_server_gpus,
            as_json,
        )
        return
    quiet_training_libraries()  # before the config: TrainingArguments warns as it is built
    cfg = load_command_config(config_path, overrides)
    check_folder_destination(cfg.output_dir, "output_dir=")  # before anything loads
    note = locate_model(cfg.model, label="model=").note  # a bad model: one line, before a load
    console = stderr_console()
    if note:
        console.print(f"paravt: warning: {note}", highlight=False, markup=False)
    console.print(
        f"[bold]paravt train[/bold] → {cfg.output_dir} (model {cfg.model})", soft_wrap=True
    )
    import contextlib
    import sys

    with contextlib.redirect_stdout(
        sys.stderr
    ):  # HF Trainer prints logs: stdout is for the result only
        try:
            summary = run_training(cfg, resume=resume, console=console)
        except KeyboardInterrupt:  # what is kept, and the command that goes on
            raise run_interrupted(cfg.output_dir) from None
    if not leave_process_group():
        return
    if as_json:
        emit_json(summary)
    else:
        done = RunSummary.from_json(summary)
        click.echo(
            f"trained {done.global_step} steps; model in {done.final_model}; "
            f"metrics in {done.metrics_file}"
        )


def _print_plan(
    cfg, world_size, strategy, accelerate_config, gpu, gpu_gb, server_gpus, as_json
) -> None:
    """The memory plan and the step-time estimate on stdout; a plan that cannot fit ends with its
    fix (exit 2)."""
    chip = gpu_of(gpu)
    gpu_gb = chip.memory_gb if gpu_gb is None else gpu_gb
    plan = plan_for_command(
        cfg,
        world_size=world_size,
        strategy=strategy,
        gpu_gb=gpu_gb,
        accelerate_config=accelerate_config,
        launcher_world_size=os.environ.get("WORLD_SIZE"),  # the launcher's fact, not a setting
    )
    est = step_time(plan, chip, server_gpus=server_gpus)
    if as_json:
        emit_json({**plan.to_dict(), "step_time": est.to_dict()})
    else:
        click.echo(format_plan(plan) + "\n\n" + format_step_time(est))
    fix = fix_for(plan)
    if fix and plan.total > plan.gpu_bytes:
        raise ConfigError(
            f"the plan needs {plan.total / 1e9:.1f} GB a GPU, more than {gpu_gb:g} GB: {fix}"
        )
    if fix:  # within the GPU, but vLLM's colocated share cannot start (weights or one episode)
        raise ConfigError(f"the plan does not fit: {fix}")
