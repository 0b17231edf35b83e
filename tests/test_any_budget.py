"""A ratchet on ``Any`` in function signatures across the package: the count may only go down.

Why: pyright checks what is typed, and ``Any`` switches it off for every value that passes
through. The seams between rooms are typed values (``paravt.schema``); an ``Any`` in a signature
is a seam the type checker cannot see. Counted with ``ast`` (nothing imported, well under a
second): one for each parameter or return annotation that mentions ``Any`` (``Any``,
``list[Any]``, ``dict[str, Any] | None``, ``typing.Any`` or a string annotation that names it),
in every function and method of src/paravt, kernels/ and cli/.

``BUDGET`` is today's count. A change that adds one fails; a change that removes some fails too,
until ``BUDGET`` is lowered to the new count, so the number in this file is always the true one.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the package's folders (setup.py installs kernels/ and cli/ as paravt.kernels and paravt.cli)
FOLDERS = [REPO / "src" / "paravt", REPO / "kernels", REPO / "cli"]
#: annotations in signatures that mention ``Any``: 425 when the test was written (2026-12-07),
#: 408 once the config coercers, the reward readers and the episode sheet took typed values
#: (main held 428 after the N-rank training landed)
BUDGET = 408


def _mentions_any(annotation: ast.expr) -> bool:
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id == "Any":
            return True
        if isinstance(node, ast.Attribute) and node.attr == "Any":
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                inner = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                continue
            if _mentions_any(inner):
                return True
    return False


def _annotations(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    a = fn.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
    found = [p.annotation for p in params if p is not None and p.annotation is not None]
    return found + ([fn.returns] if fn.returns is not None else [])


def any_in_signatures() -> dict[str, int]:
    """File (relative to the repository) -> its annotations in signatures that mention Any."""
    out = {}
    for folder in FOLDERS:
        for path in sorted(folder.rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            n = sum(
                _mentions_any(ann)
                for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                for ann in _annotations(node)
            )
            if n:
                out[str(path.relative_to(REPO))] = n
    return out


def test_any_in_signatures_only_goes_down():
    counts = any_in_signatures()
    total = sum(counts.values())
    worst = ", ".join(f"{f} {n}" for f, n in sorted(counts.items(), key=lambda x: -x[1])[:5])
    assert total <= BUDGET, (
        f"{total} annotations in signatures mention Any, over the budget of {BUDGET}: type the "
        f"new parameters (a dataclass of paravt.schema, a Protocol, object) (most: {worst})"
    )
    assert total == BUDGET, f"Any in signatures went down to {total}: lower BUDGET to {total}"


def test_the_counter_sees_each_form_of_any():
    code = (
        "def f(a: Any, b: list[Any], c: 'dict[str, Any] | None', *d: typing.Any, e: int) -> Any:"
        "\n    pass\n"
    )
    fn = ast.parse(code).body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert sum(_mentions_any(a) for a in _annotations(fn)) == 5
