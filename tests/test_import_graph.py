"""The layer rule of ``docs/INTERFACES.md``, checked: imports run one way and never in a circle.

Why: a rule that only lives in prose erodes one convenient import at a time. This test reads every
module of the package with ``ast`` (nothing is imported, so it takes well under a second) and
fails on

- a cycle among the module-level imports of paravt modules (what Python executes at import);
- an upward edge between rooms, module-level or inside a function (a deferred import is still a
  dependency): ``errors/config/grammar`` <- ``video``, ``kernels``, ``rewards``, ``models`` <-
  ``tools`` <- ``agent`` <- ``data``, ``eval``, ``train``, ``toy``, ``backends`` <- ``cli``.

An upward edge that has to stay for now goes into ``ALLOWED_UPWARD`` with its reason; an entry
that no longer matches an import fails the test, so the list only shrinks.
"""

from __future__ import annotations

import ast
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
    {"errors", "config", "grammar", "logs"},
    {"video", "kernels", "rewards", "models"},  # models: tiny offline models
    {"tools"},
    {"agent", "viz"},  # viz draws the agent's episode records
    # backends: every model behind the engine; beside train and toy, whose lockstep, streams and
    # task they read (the protocol itself sits lower, in MODULE_LEVELS)
    # serve: paravt's tools over MCP (the engine's window frames); viewer: the static site of runs
    {"data", "eval", "train", "toy", "backends", "serve", "viewer"},
    {"cli"},
]
#: Modules that sit at another level than their room (``docs/INTERFACES.md`` says why).
MODULE_LEVELS = {
    "paravt": 0,  # the package root: version and the error types only
    "paravt.tools.schema": 0,  # the crop_video schema, pure data: the parser and prompts read it
    "paravt.cli.common": 0,  # config options and output helpers shared by commands
    "paravt.backends.base": 3,  # the Backend protocol: the engine (agent) needs only it
    "paravt.agent.backends": 4,  # the old public path: re-exports paravt.backends' names
}
#: (importer, imported) -> why this upward edge stays for now. Empty: the house has none.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    line: int
    module_level: bool

    def where(self) -> str:
        kind = "module level" if self.module_level else "inside a function"
        return f"{self.source} -> {self.target} (line {self.line}, {kind})"


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


def import_edges(modules: dict[str, Path], root: str = "paravt") -> list[Edge]:
    """Every import of a ``root`` module, resolved to the most specific module it names."""
    edges: dict[tuple[str, str, int], Edge] = {}  # one edge per import statement and target
    for name, path in sorted(modules.items()):
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node, module_level in _walk(ast.parse(path.read_text()).body, True):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = package[: len(package) - node.level + 1]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            else:
                continue
            for target in targets:
                if target == root or target.startswith(root + "."):
                    while target not in modules and "." in target:  # `import a.b.c` names a.b.c
                        target = target.rsplit(".", 1)[0]
                    if target != name:
                        edge = Edge(name, target, node.lineno, module_level)
                        edges.setdefault((name, target, node.lineno), edge)
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
    return [e for e in edges if level_of(e.target) > level_of(e.source)]


# -- the package ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def package_edges() -> list[Edge]:
    return import_edges(find_modules(PACKAGE_DIRS))


def test_no_import_cycle_among_paravt_modules(package_edges):
    cycles = find_cycles([e for e in package_edges if e.module_level])
    detail = [
        "cycle: " + ", ".join(c) + "\n  " + "\n  ".join(
            e.where() for e in package_edges if e.module_level and {e.source, e.target} <= set(c)
        )
        for c in cycles
    ]  # fmt: skip
    assert not cycles, "module-level imports run in a circle:\n" + "\n".join(detail)


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
    deferred = [e for e in package_edges if not e.module_level and level_of(e.target) == 0]
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


#: old public paths kept as thin re-exports (docs/CHANGELOG.md): for users, never for the package
REEXPORTS = {"paravt.agent.backends", "paravt.toy.oracle"}
#: the trainer core's one door into ``paravt.train.launch``: the rollout's lockstep primitives
CORE_LAUNCH_IMPORTS = {"paravt.train.launch.lockstep"}


def test_the_package_does_not_import_its_own_reexports(package_edges):
    used = [e.where() for e in package_edges if e.target in REEXPORTS]
    assert not used, "import the new home (docs/CHANGELOG.md):\n  " + "\n  ".join(used)


def test_the_trainer_core_leaves_the_launch_to_run(package_edges):
    """``paravt.train.run`` (and the sft run) compose ``paravt.train.launch``; the trainer core
    (trainer, config, advantages, gating, metrics, ...) reaches into it only for the lockstep."""

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
