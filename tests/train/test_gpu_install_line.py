"""The README's GPU install line and its constraints: what `.ci/run` dry-runs against the registry.

The dry-run itself needs the registry (minutes, network), so it runs in `.ci/run`
(``scripts/gpu-install-dryrun.sh``), not here. Here: the script reads the README's line, turns it
into the dry-run, passes a resolver error on as its exit status, and the pinned vLLM is one paravt
accepts (``paravt.rollout.vllm_stack``) — not the release whose flashinfer pin has no wheel.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from paravt.rollout.vllm_stack import STACKS, series

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu-install-dryrun.sh"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            pins[name.strip()] = version.strip()
    return pins


def test_the_script_is_valid_bash_and_dry_runs_the_readme_line() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    shown = subprocess.run(
        ["bash", str(SCRIPT), "--print"], check=True, capture_output=True, text=True
    )
    assert shown.stdout.strip() == (
        "pip install --dry-run --ignore-installed --quiet -c constraints-vllm-gpu.txt vllm trl -e ."
    )


def test_the_pinned_vllm_is_an_accepted_stack_and_not_the_unresolvable_one() -> None:
    pins = _pins(ROOT / "constraints-vllm-gpu.txt")
    # 0.34.0 wants flashinfer-python==0.7.3, which the registry lacks (the file's header says so)
    assert pins["vllm"] != "0.34.0"
    have = {
        "vllm": series(pins["vllm"]),
        "trl": series(pins["trl"]),
        "transformers": series(pins["transformers"]),
    }
    assert any(s.admits(have) for s in STACKS), have


def test_a_resolver_error_fails_the_script(tmp_path: Path) -> None:
    """A line pip cannot resolve (offline: --no-index, a version that exists nowhere) exits non-zero."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / SCRIPT.name)
    (tmp_path / "README.md").write_text(
        "GPU line:\n<!-- gpu-install -->\n`pip install --no-index paravt-no-such-package==0.0.1`.\n"
    )
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").symlink_to(sys.executable)
    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / SCRIPT.name)],
        capture_output=True,
        text=True,
        env={"PATH": f"{bindir}:/usr/bin:/bin", "PIP_NO_INPUT": "1"},
    )
    assert done.returncode != 0
    assert "No matching distribution" in done.stderr or "from versions: none" in done.stderr


def test_a_readme_without_the_line_is_refused(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    shutil.copy(SCRIPT, tmp_path / "scripts" / SCRIPT.name)
    (tmp_path / "README.md").write_text("no GPU line here\n")
    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / SCRIPT.name)], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert "<!-- gpu-install -->" in done.stderr
