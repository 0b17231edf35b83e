"""Benchmark adapters: each reads one benchmark's native files into ``EvalSample`` objects.

An adapter registers itself: a module of this package decorates its loader with
``@register(NAME, aliases=..., layout=...)``, and importing the package imports every module of
it (a name without a leading underscore), so a new benchmark is one file here. A loader takes
``(data, videos)`` (the ``--data`` and ``--videos`` paths) and returns a ``LoadedSplit``.
``load_split(name, data, videos)`` is the one entry point; names are case-insensitive and
accept the common spellings (``video-mme``, ``charades-sta``…). ``register`` also takes a loader
defined elsewhere (a test, a user's module imported before the run).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from paravt.errors import UserError
from paravt.eval.samples import LoadedSplit

__all__ = ["split_names"]

#: a loader: ``(data, videos) -> LoadedSplit``
Loader = Callable[[Path, Path], LoadedSplit]


@dataclass(frozen=True)
class Adapter:
    """A registered benchmark split: its name, its loader, other spellings, what it reads."""

    name: str
    load: Loader
    aliases: tuple[str, ...] = ()
    layout: str = ""


#: every registered split by name, in registration order
ADAPTERS: dict[str, Adapter] = {}
_ALIASES: dict[str, str] = {}


def _key(name: str) -> str:
    return str(name).strip().lower()


def register(name: str, *, aliases: tuple[str, ...] = (), layout: str = "") -> Callable:
    """Decorator: register ``load`` as the split ``name`` (also reached by ``aliases``);
    ``layout`` says what ``--data`` holds. A name or alias taken by another split is an error."""

    def add(load: Loader) -> Loader:
        key = _key(name)
        for spelling in (key, *map(_key, aliases)):
            taken = ADAPTERS.get(spelling) or ADAPTERS.get(_ALIASES.get(spelling, ""))
            if taken is not None and taken.load is not load:
                raise ValueError(f"benchmark {spelling!r} is registered already ({taken.name})")
        ADAPTERS[key] = Adapter(key, load, tuple(map(_key, aliases)), layout)
        _ALIASES.update({_key(a): key for a in aliases})
        return load

    return add


def unregister(name: str) -> None:
    """Remove the split ``name`` and its aliases (a test's own adapter, after the test)."""
    adapter = ADAPTERS.pop(_key(name), None)
    for alias in adapter.aliases if adapter else ():
        _ALIASES.pop(alias, None)


def split_names() -> tuple[str, ...]:
    """The registered splits, in registration order."""
    return tuple(ADAPTERS)


def canonical_split(name: str) -> str:
    key = _key(name)
    key = _ALIASES.get(key, key)
    if key not in ADAPTERS:
        raise UserError(f"unknown benchmark {name!r}; choose one of: {', '.join(ADAPTERS)}")
    return key


def load_split(name: str, data: str | Path, videos: str | Path) -> LoadedSplit:
    """Read the split ``name`` from the annotation folder ``data`` and the video folder ``videos``.

    Sample ids are made unique: a repeated id (a re-used question id in a release) gets a
    ``~2``, ``~3``… suffix and the renaming is listed in ``LoadedSplit.renamed`` (and the
    summary), so results files can key on ids without losing a question.
    """
    loaded = ADAPTERS[canonical_split(name)].load(Path(data), Path(videos))
    if Path(data).is_dir():
        loaded.ignored = unread_annotations(loaded.sources)
    seen: dict[str, int] = {}
    for sample in loaded.samples:
        count = seen.get(sample.id, 0) + 1
        seen[sample.id] = count
        if count > 1:
            new = f"{sample.id}~{count}"
            while new in seen:
                count += 1
                new = f"{sample.id}~{count}"
            seen[new] = 1
            loaded.renamed.append((sample.id, new))
            sample.id = new
    return loaded


def unread_annotations(sources: list[str]) -> list[str]:
    """The files beside the annotation files read that have one of their suffixes and were not
    read: the other candidates an adapter chose between (``eval.jsonl`` beside ``test.jsonl``,
    a second ``*.json``), which a run names so the choice is never silent."""
    read = {Path(s).resolve() for s in sources}
    suffixes = {Path(s).suffix.lower() for s in sources}
    folders = {Path(s).parent for s in sources}
    found = {
        str(p)
        for folder in folders
        for p in folder.iterdir()
        if p.is_file() and p.suffix.lower() in suffixes and p.resolve() not in read
    }
    return sorted(found)


def _discover() -> None:
    """Import every module of this package (the adapters register themselves as they load)."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_discover()
