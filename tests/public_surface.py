"""What each paravt module offers the other rooms, read with ``ast`` (nothing imported).

A room is ``paravt.<room>`` (``docs/INTERFACES.md`` §1). A module's public surface is its
``__all__``: the names another room, the CLI, the benchmarks, the experiments or the scripts
import from it, and the names docs/INTERFACES.md cites. Everything else in a module serves its own
room, even without a leading underscore. The tests may import any name: testing a helper does not
make it public.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from test_import_graph import PACKAGE_DIRS
from test_import_graph import find_modules as _modules_under

REPO = Path(__file__).resolve().parents[1]
#: code outside the package that uses it as a user would (the tests are not among them)
CONSUMERS = ["benchmarks", "experiments", "scripts"]
INTERFACES = REPO / "docs" / "INTERFACES.md"
#: a backticked dotted paravt name in the docs
_CITED = re.compile(r"`(paravt(?:\.\w+)+)`")


@dataclass(frozen=True)
class Use:
    """``importer`` reads ``name`` from ``module`` (``where``: file and line, for messages)."""

    importer: str
    module: str
    name: str
    where: str


def find_modules() -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the installed packages (the
    import-graph test's reader, over the same package folders)."""
    return _modules_under(PACKAGE_DIRS)


def room_of(module: str) -> str:
    """``paravt.video.source`` -> ``video``; code outside the package is its own room."""
    parts = module.split(".")
    if parts[0] != "paravt":
        return module
    return parts[1] if len(parts) > 1 else "paravt"


def _consumer_files() -> dict[str, Path]:
    """Files outside the package that import it: scripts without a suffix count when Python."""
    out = {}
    for folder in CONSUMERS:
        for path in sorted((REPO / folder).rglob("*")):
            if not path.is_file() or "results" in path.parts or ".venv" in path.parts:
                continue
            if path.suffix == ".py" or (not path.suffix and _is_python(path)):
                out[path.relative_to(REPO).as_posix()] = path
    return out


def _is_python(path: Path) -> bool:
    try:
        return path.read_text(errors="replace").startswith("#!/usr/bin/env python")
    except OSError:
        return False


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str | None:
    if node.level == 0:
        return node.module
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def uses_in(importer: str, path: Path, modules: dict[str, Path]) -> list[Use]:
    """Every ``from M import n`` and ``import M as a`` + ``a.n`` of a paravt module in a file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    is_package = path.name == "__init__.py"
    out: list[Use] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _absolute(node, importer, is_package)
            if target in modules:
                for a in node.names:
                    if f"{target}.{a.name}" not in modules:  # a submodule is not a name
                        out.append(Use(importer, target, a.name, f"{path}:{node.lineno}"))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            module = aliases[node.value.id]
            if f"{module}.{node.attr}" not in modules:
                out.append(Use(importer, module, node.attr, f"{path}:{node.lineno}"))
    return out


def cited_names(modules: dict[str, Path]) -> list[Use]:
    """``paravt.x.y.Name`` in docs/INTERFACES.md where ``paravt.x.y`` is a module."""
    out = []
    for n, line in enumerate(INTERFACES.read_text().splitlines(), 1):
        for dotted in _CITED.findall(line):
            module, _, name = dotted.rpartition(".")
            if dotted not in modules and module in modules:
                out.append(Use("docs/INTERFACES.md", module, name, f"{INTERFACES}:{n}"))
    return out


def outside_uses(modules: dict[str, Path] | None = None) -> list[Use]:
    """The uses a module's ``__all__`` must declare: from another room, from code outside the
    package, or cited by docs/INTERFACES.md; names with a leading underscore aside."""
    modules = find_modules() if modules is None else modules
    uses = [u for m, p in modules.items() for u in uses_in(m, p, modules)]
    uses += [u for name, p in _consumer_files().items() for u in uses_in(name, p, modules)]
    uses += cited_names(modules)
    return [
        u
        for u in uses
        if not u.name.startswith("_") and u.name != "*" and room_of(u.importer) != room_of(u.module)
    ]


def declared(path: Path) -> list[str] | None:
    """The module's ``__all__`` as written (a literal list or tuple of strings), or None."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in tree.body:
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AnnAssign)
            else []
        )
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value:
            return _strings(node.value, tree)
    return None


def _strings(value: ast.expr, tree: ast.Module) -> list[str]:
    """The strings of a literal list / tuple, of ``sorted(NAME)`` / ``list(NAME)`` where NAME
    is a module-level literal (a lazy-export table: its keys), else none."""
    if isinstance(value, ast.List | ast.Tuple | ast.Set):
        return [e.value for e in value.elts if isinstance(e, ast.Constant)]
    if isinstance(value, ast.Dict):
        return [k.value for k in value.keys if isinstance(k, ast.Constant)]
    if isinstance(value, ast.Call) and value.args and isinstance(value.args[0], ast.Name):
        name = value.args[0].id
        for node in tree.body:
            target = node.target if isinstance(node, ast.AnnAssign) else None
            targets = node.targets if isinstance(node, ast.Assign) else [target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value:
                return _strings(node.value, tree)
    return []


def _binds(node: ast.AST, imports: bool = True) -> set[str]:
    """The names one statement binds: a def or class, an assignment's targets, an import's
    names (unless ``imports`` is False)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if imports and isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return set()


def defined(path: Path) -> set[str]:
    """Top-level names a module binds, those under an ``if`` or ``try`` (TYPE_CHECKING
    imports, fallbacks) included; the names of a module-level ``__getattr__`` (lazy exports) are
    left to ``__all__`` itself."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in tree.body:
        nested = ast.walk(node) if isinstance(node, ast.If | ast.Try) else [node]
        for sub in nested:
            names |= _binds(sub)
    return names


def lazy_exports(path: Path) -> bool:
    """The module answers names through a module-level ``__getattr__``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return any(isinstance(n, ast.FunctionDef) and n.name == "__getattr__" for n in tree.body)


def own_definitions(path: Path) -> set[str]:
    """Top-level names a module defines itself: functions, classes and assignments."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = {n for node in tree.body for n in _binds(node, imports=False)}
    return names - {"__all__"}
