"""What every subcommand shares: the config flags (``--config``, ``--set``; the loader is
``paravt.config.load_config``), stdout/stderr discipline, error → exit code."""

from __future__ import annotations

import json
import logging
import shlex
import sys
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from paravt.config import to_data
from paravt.errors import Interrupted, ItemsFailedError, UserError

__all__: list[str] = []  # nothing here is for the other rooms


def config_options(fn: Callable) -> Callable:
    """Add ``--config FILE`` and repeatable ``--set key=value`` to a command."""
    fn = click.option(
        "--set",
        "overrides",
        multiple=True,
        metavar="KEY=VALUE",
        help="Override one config key (dotted for nested keys); repeatable.",
    )(fn)
    fn = click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        default=None,
        help="YAML config file for this command.",
    )(fn)
    return fn


def json_option(fn: Callable) -> Callable:
    return click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout.")(
        fn
    )


def force_option(fn: Callable) -> Callable:
    return click.option(
        "--force",
        is_flag=True,
        help="Write into the folder even when it holds files this command did not write.",
    )(fn)


def check_output_folder(
    path: str | Path, command: str, ours: Callable[[Path], bool], force: bool
) -> None:
    """Refuse to write into ``path`` when it holds something the command did not write.

    Absent or empty is fine; so is a folder ``ours`` recognises as this command's earlier output
    (it is rewritten); anything else needs ``--force``. The message names what is there."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise UserError(f"{command}: {folder} is a file, not a folder: choose a folder path")
    if force or not folder.is_dir():
        return
    entries = sorted(folder.iterdir())
    if not entries or ours(folder):
        return
    names = [e.name + ("/" if e.is_dir() else "") for e in entries]
    shown = ", ".join(names[:5]) + (f", ... ({len(names)} in all)" if len(names) > 5 else "")
    raise UserError(
        f"{command}: {folder} already holds files it did not write ({shown}); choose a new or "
        "empty folder, or pass --force to write into it anyway (files of the same name are "
        "replaced)"
    )


def emit_json(obj: Any) -> None:
    """Write one JSON document to stdout."""
    click.echo(json.dumps(to_data(obj), indent=2, default=str))


def quiet_model_loading() -> None:
    """Leave out transformers' own progress bars (``Loading weights``, ``Writing model
    shards``): the command shows its own status line on stderr while a model loads."""
    from transformers.utils import logging as hf_logging  # transformers loads torch

    hf_logging.disable_progress_bar()


def quiet_training_libraries() -> None:
    """What ``train`` and ``sft`` leave out of stderr: transformers' own progress bars, and the
    FutureWarnings of a rename between the libraries. TRL 1.16 reads transformers' old names of
    activation checkpointing (``gradient_checkpointing``, ``is_gradient_checkpointing``, renamed
    in 5.24), so that warning came once a step, and nothing in a recipe answers it; any other
    FutureWarning is shown once."""
    warnings.filterwarnings("once", category=FutureWarning)
    warnings.filterwarnings(
        "ignore",
        message=r"`(is_)?gradient_checkpointing(_kwargs)?` is deprecated",
        category=FutureWarning,
    )
    # DeepSpeed, when installed, is imported by transformers and says on a machine without a GPU
    # that it fell back to the CPU (a warning of its own logger, which it configures as it is
    # imported: a filter outlasts that). The run's own line already says where it trains.
    logging.getLogger("DeepSpeed").addFilter(_NotTheCpuFallback())
    quiet_model_loading()


class _NotTheCpuFallback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Setting accelerator to CPU")


def stderr_console():
    """A rich console bound to stderr (progress, tables for people, logs)."""
    from rich.console import Console

    return Console(stderr=True)


class StepProgress:
    """Progress of a command's known number of steps on stderr: a rich bar redrawn in place on a
    terminal; elsewhere (a log file, a pipe) a plain line at each tenth of the way and at the end,
    so a long run says where it is without flooding the log."""

    def __init__(self, label: str, total: int):
        self.label, self.total, self.done, self._printed = label, max(1, total), 0, -1
        self.console = stderr_console()
        self.bar = None
        if self.console.is_terminal:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self.task = self.bar.add_task(label, total=self.total)

    def __enter__(self) -> StepProgress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def update(self, done: int, text: str | None = None) -> None:
        """``done`` steps of ``total`` are finished; ``text`` says what runs now."""
        self.done = min(done, self.total)
        line = f"{self.label}: {text}" if text else self.label
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, description=line)
            return
        tenth = self.done * 10 // self.total
        if tenth > self._printed or self.done == self.total:
            self._printed = tenth
            self.console.print(f"{line} [{self.done}/{self.total}]", highlight=False, markup=False)


def stdout_console(max_width: int | None = None):
    """A rich console bound to stdout; ``max_width`` caps its width (off a terminal the width is
    ``max_width`` itself, and rich writes no colour codes there)."""
    from rich.console import Console

    console = Console()
    if max_width is not None:
        console.width = min(console.width, max_width) if console.is_terminal else max_width
    return console


def print_table(renderable: Any) -> None:
    """Print a rich table (or a group of them) on stdout whole: off a terminal the page is as
    wide as the widest table, instead of rich's 80 columns (which cut cells to ``workl…``); on
    a terminal the terminal's width decides, as there."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal:
        wide = console.options.update_width(10_000)  # measured unconstrained, not at 80
        console.width = max(80, console.measure(renderable, options=wide).maximum)
    console.print(renderable)


def debug_first(args: list[str]) -> tuple[list[str], bool]:
    """``(args, debug)``: ``--debug`` moved to the front, where the group reads it, from
    wherever it was given before a ``--`` (``paravt infer v.mp4 -q x --debug`` as well as
    ``paravt --debug infer ...``); what follows ``--`` is left as it is."""
    end = args.index("--") if "--" in args else len(args)
    head = [a for a in args[:end] if a != "--debug"]
    debug = len(head) < end
    return (["--debug"] if debug else []) + head + args[end:], debug


def rerun_line(args: list[str], add: tuple[str, ...] = (), drop: tuple[str, ...] = ()) -> str:
    """The command line ``args`` (without ``--debug``) as a person types it again, with the
    flags ``add`` that are not there yet and without those in ``drop``: ``paravt eval ...
    --resume``."""
    words = [a for a in args if a != "--debug" and a not in drop]
    words += [flag for flag in add if flag not in words]
    return "paravt " + shlex.join(words)


def command_line(add: tuple[str, ...] = (), drop: tuple[str, ...] = ()) -> str:
    """``rerun_line`` of the command now running (``run_guarded`` keeps its words)."""
    ctx = click.get_current_context(silent=True)
    obj = ctx.find_root().obj if ctx is not None else None
    args = obj.get("argv", []) if isinstance(obj, dict) else []
    return rerun_line(list(args), add, drop)


def run_guarded(group: click.Group, argv: list[str] | None) -> int:
    """Invoke the Click group, turning user errors into one line on stderr and exit code 2."""
    args, debug = debug_first(list(sys.argv[1:] if argv is None else argv))
    try:
        group.main(args=args, prog_name="paravt", standalone_mode=False, obj={"argv": args})
        return 0
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.Abort:
        click.echo("paravt: aborted", err=True)
        return 130
    except click.ClickException as e:  # a usage error: its traceback is click's, never shown
        e.show()
        return 2
    except UserError as e:
        if debug:
            traceback.print_exc()
        click.echo(f"paravt: error: {e}", err=True)
        return 2
    except ItemsFailedError as e:
        click.echo(f"paravt: {e}", err=True)
        return 1
    except Interrupted as e:  # Ctrl-C in a command that keeps its work: what, and how on
        how = "continue with" if "--resume" in e.add else "start it again with"
        click.echo(
            f"paravt: interrupted: {e.kept}; {how}: {rerun_line(args, e.add, e.drop)}", err=True
        )
        return 130
    except KeyboardInterrupt:
        click.echo("paravt: interrupted", err=True)
        return 130
    except BrokenPipeError:
        return 0
    # an internal error: say so on stderr, and keep the traceback behind --debug
    except Exception as e:  # noqa: BLE001 - the last guard of every command
        if debug:
            traceback.print_exc()
        else:
            click.echo(
                f"paravt: internal error: {type(e).__name__}: {e} (rerun with --debug for the traceback)",
                err=True,
            )
        return 1
