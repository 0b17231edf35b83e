"""pyright, in basic mode, finds no error in the whole package (``[tool.pyright]`` in
pyproject.toml: src/paravt, and kernels/ and cli/, installed as paravt.kernels and paravt.cli).

Why: the seams between rooms are typed values (records, configs, the backend contract), and a
seam that drifts (an Optional read as present, a Literal given a free string, a probe of a
paravt object with ``getattr``) is what a type checker sees first. pyright comes with the dev
extras (``pyright[nodejs]``: node from PyPI, pyright bundled in its wheel), so this runs offline.
Over the whole package (200 files) it takes about 30 s on one core.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_pyright_basic_finds_no_error_in_the_package():
    pyright = shutil.which("pyright")
    assert pyright is not None, "pyright is missing: pip install -e '.[dev]' installs it"
    done = subprocess.run(
        [pyright, "--outputjson"], cwd=REPO, capture_output=True, text=True, timeout=600
    )
    report = json.loads(done.stdout)
    errors = [
        f"{d['file']}:{d['range']['start']['line'] + 1}: {d['message'].splitlines()[0]}"
        for d in report["generalDiagnostics"]
        if d["severity"] == "error"
    ]
    assert report["summary"]["filesAnalyzed"] > 150, report["summary"]  # the whole package
    assert errors == [], "\n".join(errors)
