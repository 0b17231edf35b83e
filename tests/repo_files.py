"""The repo's scripts, benchmarks and experiment runners as modules, for the tests that read them.

Why: those files are run by path (``python scripts/vllm_probe.py``, ``experiments/toy_paradox/run``),
not imported from a package, and a test needs their functions and tables. One loader reads them
the same way everywhere: by path, under a name of the test's choosing, registered in
``sys.modules`` (their dataclasses look their module up while they are defined).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def load_repo_file(relpath: str, name: str) -> ModuleType:
    """The file REPO/relpath executed as module ``name``, afresh on every call (a test may change
    its tables); a file without the ``.py`` suffix (an executable runner) loads as Python source
    all the same."""
    loader = importlib.machinery.SourceFileLoader(name, str(REPO / relpath))
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return module
