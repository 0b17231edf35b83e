"""Entry point of the ``paravt`` console script.

Subcommands live in ``cli/cmd_*.py`` modules, each exporting a Click object named ``command``;
they are discovered here so each command arrives with its own module. Command modules keep
heavy imports (torch, transformers) inside the command body so ``--help`` stays fast.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import click

from paravt import __version__
from paravt.cli.common import run_guarded
from paravt.logs import one_line_logging

__all__: list[str] = []  # nothing here is for the other rooms


def _discover(group: click.Group) -> None:
    import paravt.cli as pkg

    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if not info.name.startswith("cmd_"):
            continue
        module = importlib.import_module(f"paravt.cli.{info.name}")
        cmd = getattr(module, "command", None)
        if isinstance(cmd, click.Command):
            group.add_command(cmd)


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="paravt")
@click.option(
    "--debug", is_flag=True, help="Show full tracebacks for errors (anywhere on the line)."
)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """paravt: parallel crop_video tool use for video LMMs, and PARA-GRPO training on TRL.

    Results go to stdout (JSON with --json); progress and logs go to stderr.
    Exit codes: 0 success; 1 it ran, but some questions or samples failed (their errors are in
    the output; eval: none of its questions could be scored), or an internal error; 2 bad input
    (a flag, config, path, video or model), refused before anything heavy ran; 130 interrupted
    (Ctrl-C: eval, train and sft name what was kept and the command that goes on).
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    one_line_logging(debug)  # a room's logged failure: one line on stderr (--debug: traceback)


_discover(cli)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit code (0; 1 items failed or internal error; 2 user
    error)."""
    return run_guarded(cli, argv)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
