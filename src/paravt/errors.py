"""The error hierarchy every room raises from.

``UserError`` marks a problem with the user's input (a path, a flag, a config key); the CLI prints
its message as one line and exits 2. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class ParavtError(Exception):
    """Base class of all paravt errors."""


class UserError(ParavtError):
    """Bad input from the user: the message names the input and says how to fix it."""


class ConfigError(UserError):
    """A config file or a ``--set`` override that does not fit the command's config dataclass."""
