"""``paravt sft``: the cold start — supervised fine-tuning on episodes played by a trajectory
backend through the real episode engine, before PARA-GRPO (docs/train/SFT.md)."""

from __future__ import annotations

import contextlib
import sys

import click

from paravt.cli.common import emit_json, json_option, quiet_training_libraries, stderr_console
from paravt.cli.interrupted_runs import run_interrupted
from paravt.destinations import check_folder_destination
from paravt.models.locate import locate_model
from paravt.schema.run_summary import RunSummary

__all__: list[str] = []  # nothing here is for the other rooms


@click.command("sft")
@click.option(
    "--config",
    "config_path",
    required=True,
    metavar="RECIPE",
    help="Recipe YAML file, or a packaged recipe: sft-toy, sft-smoke.",
)
@click.option(
    "--set",
    "overrides",
    multiple=True,
    metavar="KEY=VALUE",
    help="Override one key (dotted: trajectories.options.tool_prior=0.9, trainer.max_steps=...).",
)
@click.option(
    "--resume", is_flag=True, help="Continue from the newest checkpoint in the run folder."
)
@json_option
def command(config_path: str, overrides: tuple[str, ...], resume: bool, as_json: bool) -> None:
    """Fine-tune a video LMM on engine-played trajectories (loss on generated tokens only)."""
    from paravt.train.launch.process_group import leave_process_group
    from paravt.train.sft.run import load_sft_config, run_sft

    quiet_training_libraries()  # before the config: TrainingArguments warns as it is built
    cfg = load_sft_config(config_path, overrides)
    check_folder_destination(cfg.output_dir, "output_dir=")  # before anything loads
    note = locate_model(cfg.model, label="model=").note  # a bad model: one line, before a load
    console = stderr_console()
    if note:
        console.print(f"paravt: warning: {note}", highlight=False, markup=False)
    console.print(f"[bold]paravt sft[/bold] → {cfg.output_dir} (model {cfg.model})", soft_wrap=True)
    with contextlib.redirect_stdout(sys.stderr):  # HF Trainer prints logs: stdout is the result
        try:
            summary = run_sft(cfg, resume=resume, console=console)
        except KeyboardInterrupt:  # what is kept, and the command that goes on
            raise run_interrupted(cfg.output_dir) from None
    if not leave_process_group():
        return
    if as_json:
        emit_json(summary)
    else:
        done = RunSummary.from_json(summary)
        t = summary["trajectories"]
        click.echo(
            f"trained {done.global_step} steps on {t['kept']} trajectories "
            f"({t['skipped']} skipped); model in {done.final_model}; "
            f"metrics in {done.metrics_file}"
        )
