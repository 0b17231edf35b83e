"""The episode engine's flags, one table for ``infer`` and ``eval``.

Each row names a flag, the ``engine.`` key it sets and what it does; the choices of a flag come
from the key's ``Literal`` type and the default it states from ``EngineConfig`` itself, so the
flags, the config and the help cannot drift apart. ``engine_options`` adds them to a command,
``engine_flags`` turns the given ones into the ``engine`` section of the command's flags (a flag
not given is left out: the YAML file or the default decides).
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import dataclass

import click

from paravt.agent.config import EngineConfig

__all__ = ["ENGINE_FLAGS"]

_DEFAULTS = EngineConfig()
_TYPES = typing.get_type_hints(EngineConfig)


@dataclass(frozen=True)
class EngineFlag:
    """``--flag`` sets ``engine.key``; ``help`` says what it does (the default is added)."""

    flag: str
    key: str
    help: str
    file: bool = False  # a file path (a folder is refused)

    def option(self) -> Callable:
        kind = _TYPES[self.key]
        default = getattr(_DEFAULTS, self.key)
        if typing.get_origin(kind) is typing.Literal:
            choices = click.Choice(typing.get_args(kind))
            help_ = f"{self.help} (default {default})."
            return click.option(self.flag, self.key, type=choices, default=None, help=help_)
        if kind is bool:
            name = self.flag.removeprefix("--")
            help_ = f"{self.help} (default {'on' if default else 'off'})."
            return click.option(f"--{name}/--no-{name}", self.key, default=None, help=help_)
        if self.file:
            return click.option(
                self.flag, self.key, type=click.Path(dir_okay=False), help=f"{self.help}."
            )
        return click.option(self.flag, self.key, type=int, help=f"{self.help} (default {default}).")


#: The engine's flags of ``paravt infer`` and ``paravt eval``.
ENGINE_FLAGS = (
    EngineFlag("--mode", "mode", "Tool dispatch: all calls of a turn, one a turn, or no tool"),
    EngineFlag(
        "--evidence",
        "evidence",
        "What a call returns: the window's frames, or a sub-agent's summary of them",
    ),
    EngineFlag("--frames", "frames", "Overview frame budget K"),
    EngineFlag("--max-turns", "max_turns", "Tool rounds before the forced answer"),
    EngineFlag("--max-parallel", "max_parallel", "Calls executed per turn"),
    EngineFlag(
        "--timestamps",
        "timestamps",
        "Precede overview frames with their time; off is paper-compatible",
    ),
    EngineFlag("--system-prompt", "system_prompt", "Replace the system prompt verbatim", True),
    EngineFlag(
        "--user-template",
        "user_template",
        "Replace the user turn's text: a template file with ${question}, ${options}, ... fields",
        True,
    ),
)


def engine_options(fn: Callable) -> Callable:
    """Add every ``ENGINE_FLAGS`` flag to a command (in the table's order)."""
    for row in reversed(ENGINE_FLAGS):
        fn = row.option()(fn)
    return fn


def engine_flags(kw: dict) -> dict:
    """The ``engine`` section of the flags given (``kw``: the command's keyword arguments)."""
    return {row.key: kw[row.key] for row in ENGINE_FLAGS if kw.get(row.key) is not None}
