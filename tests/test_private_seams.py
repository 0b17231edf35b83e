"""Rooms talk through public names: no ``_private`` name crosses a room boundary.

Why: a leading underscore says "this may change without notice"; a room that reaches into
another's private names couples the two where nobody looks (the decoder pool once did, see
``paravt.video.decoders``). This test reads every module of the package with ``ast`` (nothing is
imported) and fails on

- an import of a ``_name`` (or of a ``_module``) that lives in another room;
- an attribute ``x._name`` (``x`` not ``self``/``cls``/``super()``) where ``_name`` is defined
  only in other rooms: without types the receiver is unknown, so a name that the using room
  also defines counts as its own, and a name paravt never defines (a library's) is not ours to
  police.

A room is a top-level part of paravt (``paravt.video``, ``paravt.config``, ``paravt.kernels``,
``paravt.backends``, ``paravt.rollout``, ``paravt.cli``, as in ``tests/test_import_graph.py``), and
each part of ``paravt.train`` named in ``SUB_ROOMS`` (the launch machinery, SFT) is a room of its
own: the trainer core reaches them through public names only. Dunders are public.
"""

from __future__ import annotations

import ast
from collections import defaultdict

from test_import_graph import PACKAGE_DIRS, find_modules


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


#: parts of a room that are rooms of their own for private names
SUB_ROOMS = {"train.launch", "train.sft"}


def room_of(module: str) -> str:
    """``paravt.video.source`` -> ``video``; ``paravt.train.launch.plan`` -> ``train.launch``;
    ``paravt`` itself -> ``""``."""
    parts = module.split(".")
    if ".".join(parts[1:3]) in SUB_ROOMS:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else ""


def _defined_names(tree: ast.Module) -> set[str]:
    """Private names a module defines: functions, classes, assignments (module, class or
    ``self.x = ...`` in a method) and function parameters are left out (they are local)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return {n for n in out if _private(n)}


def _resolve(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imported_private(module: str, node: ast.AST, is_package: bool) -> list[str]:
    """``(module, private name)`` pairs an import statement brings in."""
    if isinstance(node, ast.ImportFrom):
        target = _resolve(module, node, is_package)
        names = [p for p in target.split(".") if _private(p)]
        return [
            f"{n} from {target}" for n in names + [a.name for a in node.names if _private(a.name)]
        ]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if any(_private(p) for p in a.name.split("."))]
    return []


def _import_target(module: str, node: ast.AST, is_package: bool) -> str:
    if isinstance(node, ast.ImportFrom):
        return _resolve(module, node, is_package)
    return node.names[0].name if isinstance(node, ast.Import) else ""


def _foreign_attribute(node: ast.AST, room: str, rooms_defining: dict[str, set[str]]) -> str:
    """The rooms that alone define ``node``'s private attribute, or ``""``."""
    if not (isinstance(node, ast.Attribute) and _private(node.attr)):
        return ""
    owner = node.value
    if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
        return ""
    if isinstance(owner, ast.Call) and getattr(owner.func, "id", "") == "super":
        return ""
    rooms = rooms_defining.get(node.attr, set())
    return str(sorted(rooms)) if rooms and room not in rooms else ""


def crossings() -> list[str]:
    modules = find_modules(PACKAGE_DIRS)
    trees = {m: ast.parse(p.read_text(), filename=str(p)) for m, p in modules.items()}
    rooms_defining: dict[str, set[str]] = defaultdict(set)
    for m, tree in trees.items():
        for name in _defined_names(tree):
            rooms_defining[name].add(room_of(m))
    found = []
    for m, tree in trees.items():
        room, path = room_of(m), modules[m]
        where = path.relative_to(PACKAGE_DIRS["paravt"].parents[1])
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            target = _import_target(m, node, is_package)
            if target.startswith("paravt") and room_of(target) != room:
                found += [
                    f"{where}:{node.lineno} imports {x}"
                    for x in _imported_private(m, node, is_package)
                ]
            if rooms := _foreign_attribute(node, room, rooms_defining):
                found.append(f"{where}:{node.lineno} uses .{node.attr}, private to {rooms}")
    return found


def test_no_private_name_crosses_a_room_boundary():
    found = crossings()
    assert not found, "private names used across rooms (make a public seam):\n" + "\n".join(found)


def test_the_check_sees_a_crossing(tmp_path, monkeypatch):
    """The walk is not vacuous: a planted cross-room private use is reported."""
    import test_private_seams as me

    fake = {"paravt": tmp_path / "paravt"}
    (fake["paravt"] / "video").mkdir(parents=True)
    (fake["paravt"] / "tools").mkdir()
    (fake["paravt"] / "video" / "source.py").write_text(
        "class S:\n    def _secret(self):\n        return 1\n"
    )
    (fake["paravt"] / "tools" / "batch.py").write_text(
        "from paravt.video.source import S\n\ndef f(s: S):\n    return s._secret()\n"
    )
    monkeypatch.setattr(me, "PACKAGE_DIRS", fake)
    assert [line.split(" ", 1)[1] for line in me.crossings()] == [
        "uses ._secret, private to ['video']"
    ]


def test_a_part_of_train_is_a_room_of_its_own():
    assert room_of("paravt.train.launch.plan") == "train.launch"
    assert room_of("paravt.train.launch") == "train.launch"
    assert room_of("paravt.train.trainer") == "train"
    assert room_of("paravt.backends.hf") == "backends"
    assert room_of("paravt") == ""
