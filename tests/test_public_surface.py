"""Every paravt module declares its public surface, and the other rooms use only that.

Why: without a declaration, every name without an underscore looks like a promise (587 of 904
did), and docs/INTERFACES.md was the only place that said which were. Now each module's
``__all__`` lists what another room, the CLI, the benchmarks, the experiments or the scripts
import from it and what docs/INTERFACES.md cites (``public_surface``); the rest serves its own
room. Read with ``ast``: nothing is imported, so this runs in about a second.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from public_surface import (
    declared,
    defined,
    find_modules,
    lazy_exports,
    outside_uses,
    own_definitions,
    room_of,
    uses_in,
)

MODULES = find_modules()


def test_every_module_declares_its_surface():
    missing = sorted(m for m, p in MODULES.items() if declared(p) is None)
    assert missing == [], "give each module an __all__ (the names other rooms import): " + (
        ", ".join(missing)
    )


def test_every_declared_name_exists():
    wrong = [
        f"{m}: {name}"
        for m, p in sorted(MODULES.items())
        if not lazy_exports(p)
        for name in declared(p) or []
        if name not in defined(p)
    ]
    assert wrong == [], "declared but not defined:\n" + "\n".join(wrong)


def test_other_rooms_use_only_declared_names():
    surface = {m: set(declared(p) or []) for m, p in MODULES.items()}
    undeclared = sorted(
        {
            f"{u.where}: {u.module}.{u.name}"
            for u in outside_uses(MODULES)
            if u.name not in surface[u.module]
        }  # fmt: skip
    )
    assert undeclared == [], (
        "a name used outside its room must be in its module's __all__ (or stay inside the "
        "room):\n" + "\n".join(undeclared)
    )


def test_the_surface_is_smaller_than_every_unprefixed_name():
    """The declaration narrows: fewer than half the names the modules define without an
    underscore are declared (a package ``__init__``'s re-exports count where declared)."""
    declared_names = sum(len(declared(p) or []) for p in MODULES.values())
    unprefixed = sum(
        1 for p in MODULES.values() for n in own_definitions(p) if not n.startswith("_")
    )
    assert declared_names < unprefixed / 2, (declared_names, unprefixed)


@pytest.mark.parametrize(
    "source,module_name,expected",
    [
        ("from paravt.video.source import open_video\n", "paravt.agent.x", ["open_video"]),
        ("import paravt.video.source as vs\nvs.open_video()\n", "paravt.agent.x", ["open_video"]),
        ("from paravt.video import source\n", "paravt.agent.x", []),  # a submodule, not a name
    ],
)
def test_the_reader_sees_both_import_forms(tmp_path: Path, source, module_name, expected):
    path = tmp_path / "x.py"
    path.write_text(source)
    modules = {**MODULES, module_name: path}
    names = [u.name for u in uses_in(module_name, path, modules)]
    assert names == expected


def test_rooms_are_the_second_name_and_outside_code_is_its_own():
    assert room_of("paravt.video.source") == "video"
    assert room_of("paravt") == "paravt"
    assert room_of("benchmarks/bench_rollout.py") == "benchmarks/bench_rollout.py"
