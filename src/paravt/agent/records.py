"""The old home of the episode engine's records, which live on the schema floor now
(``paravt.schema.episodes``). Every name still answers from here, with the house's deprecation
line (``paravt.errors.deprecated``); import it from ``paravt.schema.episodes``."""

from __future__ import annotations

from paravt.errors import deprecated

__all__: list[str] = []


def __getattr__(name: str) -> object:
    from paravt.schema import episodes

    if name.startswith("__") or not hasattr(episodes, name):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    deprecated(f"paravt.agent.records.{name}", f"use paravt.schema.episodes.{name}")
    return getattr(episodes, name)
