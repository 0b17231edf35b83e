"""The layer rule of ``docs/INTERFACES.md``, checked: imports run one way and never in a circle.

Why: a rule that only lives in prose erodes one convenient import at a time. This test reads every
module of the package with ``ast`` (nothing is imported, so it takes well under a second). An
edge is every way one paravt module makes Python run another:

- an import statement, at module level or inside a function (a deferred import is still a
  dependency);
- the package ``__init__`` modules an import runs on the way (``import paravt.a.b`` runs
  ``paravt/a/__init__.py`` first), unless the importer sits inside that package already;
- a module named by a string: a lazy export (``{"Name": "paravt.x.y"}`` read by a module
  ``__getattr__``), ``importlib.import_module("paravt.x")``, ``resources.files("paravt.x")``;
  any string constant that is exactly a paravt module's name (or ``module:attr``).

It fails on

- a cycle between rooms (``paravt.<room>``), counting every edge above: no exception moves a
  module out of its room for this check, so a cycle cannot hide behind a level;
- a cycle among the modules Python executes at import (module-level imports, the package
  ``__init__`` modules they run, and ``import_module`` calls at module level);
- an upward edge between rooms, by import or by name (the levels below; the package ``__init__``
  an import runs is checked at its own level, from its own edges).

An upward edge that has to stay for now goes into ``ALLOWED_UPWARD`` with its reason; an entry
that no longer matches an import fails the test, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

#: Where each installed package's source lives (``setup.py`` maps kernels/ and cli/ into paravt).
PACKAGE_DIRS = {"paravt": REPO / "src" / "paravt", "paravt.kernels": REPO / "kernels",
                "paravt.cli": REPO / "cli"}  # fmt: skip

#: Rooms by level, lowest first; a module may import its own level and below.
LEVELS = [
    # grammar: the turn grammar (one module), read by rewards, agent and eval alike; logs: how
    # log records reach stderr (one line each), for the CLI and the tool server
    # destinations: where a command writes, checked before anything heavy runs
    {"errors", "config", "grammar", "logs", "destinations"},
    # schema: the domain's vocabulary and the rows that cross rooms (question types, option
    # letters, the question row, ToolCounts, the episode records); it imports only errors, and
    # every room above reads it
    {"schema"},
    {"video", "kernels", "rewards", "models"},  # models: tiny offline models
    {"tools"},
    {"agent", "viz"},  # agent: the engine and its Backend protocol; viz draws episode records
    # backends: the inference backends behind the engine (hf, openai, scripted) and the factory
    # serve: paravt's tools over MCP (the engine's window frames); viewer: the static site of runs
    {"backends", "data", "serve", "viewer"},
    # rollout: everything that samples for training (the policy, vLLM, lockstep, weight push,
    # streams); eval: benchmarks through a backend the factory builds; toy: the toy task and its
    # oracle, a scripted backend
    {"rollout", "eval", "toy"},
    {"train"},  # the learner: imports the rollout, never the reverse
    {"cli"},
]
#: Modules that sit at another level than their room (``docs/INTERFACES.md`` says why).
MODULE_LEVELS = {
    "paravt": 0,  # the package root: version and the error types only
    "paravt.tools.schema": 0,  # the crop_video schema, pure data: the parser and prompts read it
    "paravt.cli.common": 0,  # config options and output helpers shared by commands
}
#: (importer, imported) -> why this upward edge stays for now. Empty: the house has none.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


#: how an edge was found (``Edge.how``): an import statement, or a string naming the module
IMPORT, BY_NAME = "import", "by name"
#: a string constant that names a paravt module, optionally ``module:attr``
_MODULE_NAME = re.compile(r"paravt(?:\.\w+)+(?::\w+)?")
#: calls whose string argument Python imports right away
_IMPORTING_CALLS = {"import_module", "__import__"}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    module_level: bool  # runs when ``source`` is imported
    how: str = IMPORT
    #: ``target`` is a package whose ``__init__`` the reference runs on the way to its module
    package_init: bool = False

    def where(self) -> str:
        kind = "module level" if self.module_level else "inside a function"
        via = "" if self.how == IMPORT else f", {self.how}"
        init = ", its package __init__" if self.package_init else ""
        return f"{self.source} -> {self.target} (line {self.line}, {kind}{via}{init})"


def find_modules(package_dirs: dict[str, Path]) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file under each package folder."""
    out = {}
    for prefix, base in package_dirs.items():
        for path in base.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([prefix, *parts])] = path
    return out


def _walk(body: list[ast.stmt], module_level: bool):
    """Statements with the flag "runs at import": function bodies do not, class bodies do."""
    for node in body:
        inner = module_level and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        yield node, module_level
        for field in ("body", "orelse", "finalbody", "handlers"):
            sub = getattr(node, field, None)
            if isinstance(sub, list):
                yield from _walk(sub, inner)


def _own_expressions(node: ast.AST):
    """The expression nodes of one statement, without the statements nested in it (``_walk``
    yields those with their own flag)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt | ast.excepthandler):
            continue
        yield from ast.walk(child)


def _known(target: str, modules: dict[str, Path]) -> str | None:
    """The most specific module ``target`` names (``import a.b.c`` may name a.b.c or a.b)."""
    while target not in modules and "." in target:
        target = target.rsplit(".", 1)[0]
    return target if target in modules else None


def _statement_targets(node: ast.AST, package: list[str], modules: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base_parts = package[: len(package) - node.level + 1]
            base = ".".join(base_parts + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
    return []


def _named_targets(node: ast.AST, module_level: bool) -> list[tuple[str, bool]]:
    """``(module name, runs at import)`` of every string in ``node`` that names a paravt module:
    it runs at import only as the argument of ``import_module`` / ``__import__`` at module
    level (a lazy export runs when its name is first read)."""
    importing = set()
    for sub in _own_expressions(node):
        if isinstance(sub, ast.Call) and sub.args:
            f = sub.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in _IMPORTING_CALLS:
                importing.add(id(sub.args[0]))
    return [
        (sub.value.split(":")[0], module_level and id(sub) in importing)
        for sub in _own_expressions(node)
        if isinstance(sub, ast.Constant)
        and isinstance(sub.value, str)
        and _MODULE_NAME.fullmatch(sub.value)
    ]


def _parents(target: str, source: str, root: str) -> list[str]:
    """The packages whose ``__init__`` importing ``target`` runs, outermost first, except those
    ``source`` sits in (already running) and the root."""
    parts = target.split(".")
    out = []
    for n in range(len(root.split(".")) + 1, len(parts)):
        pkg = ".".join(parts[:n])
        if source != pkg and not source.startswith(pkg + "."):
            out.append(pkg)
    return out


def import_edges(modules: dict[str, Path], root: str = "paravt") -> list[Edge]:
    """Every edge from a ``root`` module to another (the module docstring lists the kinds)."""
    edges: dict[tuple, Edge] = {}  # one edge per statement, target and kind

    def add(name: str, target: str, line: int, module_level: bool, how: str, init: bool) -> None:
        key = (name, target, line, how, init)
        if target != name and key not in edges:
            edges[key] = Edge(name, target, line, module_level, how, init)

    for name, path in sorted(modules.items()):
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node, module_level in _walk(ast.parse(path.read_text()).body, True):
            found = [(t, module_level, IMPORT) for t in _statement_targets(node, package, modules)]
            found += [(t, ml, BY_NAME) for t, ml in _named_targets(node, module_level)]
            for target, runs_at_import, how in found:
                if not (target == root or target.startswith(root + ".")):
                    continue
                target = _known(target, modules)
                if target is None:
                    continue
                add(name, target, node.lineno, runs_at_import, how, False)
                for pkg in _parents(target, name, root):
                    if pkg in modules:
                        add(name, pkg, node.lineno, runs_at_import, how, True)
    return list(edges.values())


def find_cycles(edges: list[Edge]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        graph.setdefault(e.source, set()).add(e.target)
        graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        cycles.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return cycles


def room_of(module: str) -> str:
    """``paravt.video.source`` -> ``video``; the package root ``paravt`` is a room of its own."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def room_cycles(edges: list[Edge]) -> list[list[str]]:
    """Cycles between rooms, counting every edge (deferred, package ``__init__``, by name)."""
    between = [
        Edge(room_of(e.source), room_of(e.target), e.line, e.module_level, e.how, e.package_init)
        for e in edges
        if room_of(e.source) != room_of(e.target)
    ]
    return find_cycles(between)


def _cycle_detail(cycles: list[list[str]], edges: list[Edge], key) -> str:
    """Each cycle with the edges that form it (``key``: a module's node, itself or its room); a
    package ``__init__`` edge is shown only where its statement has no other edge there."""
    lines = []
    for c in cycles:
        inside = [e for e in edges if key(e.source) in c and key(e.target) in c
                  and key(e.source) != key(e.target)]  # fmt: skip
        direct = {(e.source, e.line) for e in inside if not e.package_init}
        shown = [e for e in inside if not e.package_init or (e.source, e.line) not in direct]
        lines.append("cycle: " + ", ".join(c) + "".join(f"\n  {e.where()}" for e in shown))
    return "\n".join(lines)


def level_of(module: str) -> int:
    if module in MODULE_LEVELS:
        return MODULE_LEVELS[module]
    room = module.split(".")[1]
    for level, rooms in enumerate(LEVELS):
        if room in rooms:
            return level
    raise AssertionError(
        f"room {room!r} ({module}) has no place in the layer rule: add it to LEVELS in "
        "tests/test_import_graph.py and to the layer rule at the top of docs/INTERFACES.md"
    )


def upward_edges(edges: list[Edge]) -> list[Edge]:
    """Edges by import or by name to a higher level (a package ``__init__`` an import runs on
    the way is checked at its own level, from its own edges)."""
    return [e for e in edges if not e.package_init and level_of(e.target) > level_of(e.source)]


# -- the package ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def package_edges() -> list[Edge]:
    return import_edges(find_modules(PACKAGE_DIRS))


def test_no_cycle_between_rooms(package_edges):
    """Rooms depend on each other one way only, whatever the kind of edge: a deferred import, a
    package ``__init__`` on the way, or a module named by a string all count."""
    cycles = room_cycles(package_edges)
    assert not cycles, "rooms import each other (docs/INTERFACES.md §1):\n" + _cycle_detail(
        cycles, package_edges, room_of
    )


def test_no_import_cycle_among_paravt_modules(package_edges):
    at_import = [e for e in package_edges if e.module_level]
    cycles = find_cycles(at_import)
    assert not cycles, "module-level imports run in a circle:\n" + _cycle_detail(
        cycles, at_import, lambda m: m
    )


def test_no_upward_import_between_rooms(package_edges):
    up = [e for e in upward_edges(package_edges) if (e.source, e.target) not in ALLOWED_UPWARD]
    assert not up, "a lower room imports a higher one (docs/INTERFACES.md, layer rule):\n" + (
        "\n".join(f"  {e.where()}" for e in up)
    )


def test_the_foundation_is_imported_at_module_level(package_edges):
    """Level 0 (errors, config, the turn grammar, the tool schema, the CLI helpers) imports
    nothing heavy, so deferring it into a function buys nothing and hides a dependency: imports
    inside functions are for heavy optional libraries and the paravt modules that load them
    (docs/INTERFACES.md §1)."""
    deferred = [
        e
        for e in package_edges
        if e.how == IMPORT and not e.module_level and level_of(e.target) == 0
    ]
    assert not deferred, "import these at module level:\n" + "\n".join(
        f"  {e.where()}" for e in deferred
    )


def test_every_allowed_upward_edge_still_exists(package_edges):
    present = {(e.source, e.target) for e in package_edges}
    stale = [pair for pair in ALLOWED_UPWARD if pair not in present]
    assert not stale, f"remove these from ALLOWED_UPWARD, the imports are gone: {stale}"


def test_the_package_has_modules_in_every_room(package_edges):
    rooms = {m.split(".")[1] for m in find_modules(PACKAGE_DIRS) if m.count(".")}
    assert {"video", "kernels", "rewards", "tools", "agent", "train", "cli"} <= rooms
    assert len(package_edges) > 100  # the walk sees the package, not an empty folder


#: the trainer core's doors into ``paravt.train.launch``: none (the lockstep is the rollout's)
CORE_LAUNCH_IMPORTS: set[str] = set()


def test_the_trainer_core_leaves_the_launch_to_run(package_edges):
    """``paravt.train.run`` (and the sft run) compose ``paravt.train.launch``; the trainer core
    (trainer, config, advantages, gating, metrics, ...) does not reach into it."""

    def core(module: str) -> bool:
        parts = module.split(".")
        return parts[:2] == ["paravt", "train"] and len(parts) == 3 and parts[2] != "run"

    found = [
        e.where()
        for e in package_edges
        if core(e.source)
        and e.target.startswith("paravt.train.launch")
        and e.target not in CORE_LAUNCH_IMPORTS
    ]
    assert not found, "the trainer core imports launch machinery:\n  " + "\n  ".join(found)


# -- the checker on a small made-up package: it does find what it is for ---------------------------
def _package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    for rel, text in files.items():
        path = tmp_path / "paravt" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return find_modules({"paravt": tmp_path / "paravt"})


def test_checker_finds_a_module_level_cycle_and_ignores_a_deferred_one(tmp_path):
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "video/__init__.py": "",
            "video/a.py": "from paravt.video.b import f\n",
            "video/b.py": "from . import c\n",
            "video/c.py": "import paravt.video.a\n",
            "video/d.py": "from paravt.video.a import x\n",
            "video/e.py": "def g():\n    from paravt.video.d import y\n",
        },
    )
    edges = import_edges(modules)
    assert find_cycles([e for e in edges if e.module_level]) == [
        ["paravt.video.a", "paravt.video.b", "paravt.video.c"]
    ]
    assert [e.module_level for e in edges if e.source == "paravt.video.e"] == [False]


def test_checker_finds_an_upward_edge_even_inside_a_function(tmp_path):
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "rewards/__init__.py": "",
            "rewards/r.py": "def f():\n    from paravt.train.t import T\n",
            "train/__init__.py": "",
            "train/t.py": "from paravt.rewards.r import f\nclass T: ...\n",
        },
    )
    up = upward_edges(import_edges(modules))
    assert [(e.source, e.target, e.module_level) for e in up] == [
        ("paravt.rewards.r", "paravt.train.t", False)
    ]


def test_a_room_outside_the_rule_is_named():
    with pytest.raises(AssertionError, match="room 'attic'"):
        level_of("paravt.attic.box")


def _kinds(edges: list[Edge], source: str) -> list[tuple[str, str, bool, bool]]:
    """``(target, how, module level, package __init__)`` of ``source``'s edges."""
    return sorted(
        (e.target, e.how, e.module_level, e.package_init) for e in edges if e.source == source
    )


def test_a_room_cycle_through_a_deferred_import_is_found(tmp_path):
    """``a`` imports ``b`` at module level, ``b`` imports ``a`` inside a function: no module-level
    cycle, and the room cycle is there only through the deferred import."""
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a/__init__.py": "",
            "a/x.py": "from paravt.b.y import f\ndef g(): ...\n",
            "b/__init__.py": "",
            "b/y.py": "def f():\n    from paravt.a.x import g\n",
        },
    )
    edges = import_edges(modules)
    assert find_cycles([e for e in edges if e.module_level]) == []
    assert room_cycles(edges) == [["a", "b"]]
    assert room_cycles([e for e in edges if e.module_level]) == []
    assert ("paravt.a.x", IMPORT, False, False) in _kinds(edges, "paravt.b.y")


def test_a_cycle_through_a_package_init_is_found(tmp_path):
    """``b.y`` imports ``a.z``, which runs ``a/__init__.py`` first; that imports ``b.x``, which
    imports ``b.y``: Python fails there with a partly initialised module. Only the edge to the
    package ``__init__`` closes the circle among the modules, and the rooms form one too."""
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a/__init__.py": "from paravt.b.x import X\n",
            "a/z.py": "Z = 1\n",
            "b/__init__.py": "",
            "b/x.py": "from paravt.b.y import Y\nX = 1\n",
            "b/y.py": "from paravt.a.z import Z\nY = 1\n",
        },
    )
    edges = import_edges(modules)
    assert ("paravt.a", IMPORT, True, True) in _kinds(edges, "paravt.b.y")
    at_import = [e for e in edges if e.module_level]
    assert find_cycles(at_import) == [["paravt.a", "paravt.b.x", "paravt.b.y"]]
    assert find_cycles([e for e in at_import if not e.package_init]) == []
    assert room_cycles(edges) == [["a", "b"]]
    # the importer's own packages are running already: no edge to them
    assert not any(init for *_, init in _kinds(edges, "paravt.b.x"))


def test_a_room_cycle_through_a_lazy_export_string_is_found(tmp_path):
    """``a`` exports ``b``'s class by name (a module ``__getattr__`` over a dict of strings) and
    loads ``c`` with ``importlib.import_module``; both import ``a``. No import statement of
    ``a`` names ``b`` or ``c``: only the strings close the room cycle."""
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a/__init__.py": (
                "import importlib\n"
                '_EXPORTS = {"Thing": "paravt.b.thing"}\n'
                "def __getattr__(name):\n"
                "    return getattr(importlib.import_module(_EXPORTS[name]), name)\n"
            ),
            "a/base.py": "class Base: ...\n",
            "a/loader.py": (
                "import importlib\n"
                "def load():\n"
                '    return importlib.import_module("paravt.c.plug")\n'
            ),
            "b/__init__.py": "",
            "b/thing.py": "from paravt.a.base import Base\nclass Thing(Base): ...\n",
            "c/__init__.py": "",
            "c/plug.py": "from paravt.a.base import Base\n",
        },
    )
    edges = import_edges(modules)
    assert ("paravt.b.thing", BY_NAME, False, False) in _kinds(edges, "paravt.a")
    assert ("paravt.c.plug", BY_NAME, False, False) in _kinds(edges, "paravt.a.loader")
    assert room_cycles(edges) == [["a", "b", "c"]]
    assert room_cycles([e for e in edges if e.how != BY_NAME]) == []


def test_an_import_module_call_at_module_level_runs_at_import(tmp_path):
    """A string handed to ``import_module`` at module level is imported with the module: it
    counts among the module-level edges (and a circle through it is a module-level cycle)."""
    modules = _package(
        tmp_path,
        {
            "__init__.py": "",
            "a/__init__.py": "",
            "a/x.py": 'import importlib\nY = importlib.import_module("paravt.a.y")\n',
            "a/y.py": "from paravt.a import x\n",
        },
    )
    edges = import_edges(modules)
    assert find_cycles([e for e in edges if e.module_level]) == [["paravt.a.x", "paravt.a.y"]]
