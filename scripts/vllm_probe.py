#!/usr/bin/env python
"""Load vLLM in a child process through its own platform and say what it loaded, or why it
cannot run here.

    python scripts/vllm_probe.py [--models] [--json] [--cpu-only]

Prints the CPU, its SIMD level and the compiled-ops build vLLM mapped (``_C``, ``_C_AVX512`` or
``_C_AVX2``); exit 0 when vLLM loaded, 3 when it cannot run on this machine. The load happens in
a child, so a build this CPU cannot run (SIGILL) is a reason, not a dead parent. Readers:
``scripts/vllm-env.sh`` (after building the environment), the test suite's ``vllm`` marker
(tests/conftest.py skips with the reason) and its summary line. It is a tool for environments and
CI hosts; the training library asks only ``paravt.rollout.vllm_platform.cpu_problem``.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from paravt.rollout.vllm_platform import cpu_problem, host_cpu

#: exit code when vLLM cannot run on this machine (scripts/vllm-env.sh and the tests read it)
EXIT_CANNOT_RUN = 3
#: how long the child probe may take: importing vLLM and its model registry takes ~20 s on 2 cores
PROBE_TIMEOUT_S = 600.0
SCRIPT = Path(__file__).resolve()


@dataclass
class Probe:
    """What the child probe saw: vLLM's platform and the compiled-ops libraries it mapped."""

    ok: bool
    cpu_model: str
    simd_level: str
    expected_build: str | None
    platform: str | None = None
    vllm_version: str | None = None
    loaded: list[str] = field(default_factory=list)
    reason: str | None = None

    def line(self) -> str:
        """One line for a log: the CPU, its SIMD level, and the ops loaded or why none."""
        head = f"CPU: {self.cpu_model}; SIMD: {self.simd_level}"
        if not self.ok:
            return f"{head}; vLLM cannot run here: {self.reason}"
        ops = ", ".join(self.loaded) or "none (not a CPU platform)"
        return f"{head}; vLLM {self.vllm_version} on {self.platform}: loaded {ops}"


def mapped_vllm_ops() -> list[str]:
    """The files of vLLM's compiled-ops builds mapped into this process (``_C_AVX2.abi3.so``
    ...): the builds share one module name, so only the mapped file says which one loaded."""
    maps = Path("/proc/self/maps")
    mapped = maps.read_text().splitlines() if maps.exists() else []
    return sorted({ln.rsplit("/", 1)[-1] for ln in mapped if "/vllm/_C" in ln})


def _child() -> None:
    """Runs in the child: vLLM's platform loads its ops as it would in a run, then the libraries
    mapped into this process are listed. ``--models`` also imports the Qwen-VL model modules and
    torchcodec, what a broken stack fails first."""
    import torch  # noqa: F401 - vLLM's platform module expects torch loaded
    from vllm.platforms import current_platform
    from vllm.version import __version__ as vllm_version

    if current_platform.is_cpu():
        current_platform.import_kernels()
    if "--models" in sys.argv:
        import torchcodec.decoders  # noqa: F401
        import vllm.model_executor.models.qwen2_5_vl  # noqa: F401
        import vllm.model_executor.models.qwen3_vl  # noqa: F401
    report = {
        "platform": type(current_platform).__name__,
        "vllm_version": vllm_version,
        "loaded": mapped_vllm_ops(),
    }
    print("PARAVT_PROBE " + json.dumps(report), flush=True)


def probe(
    python: str = sys.executable,
    *,
    models: bool = False,
    env: dict[str, str] | None = None,
    timeout: float = PROBE_TIMEOUT_S,
) -> Probe:
    """Loads vLLM in a child ``python`` through its own platform and says what it loaded, or why
    it could not (not installed, killed by a signal such as SIGILL, an import error, a time-out).
    ``env`` replaces the child's environment (None: this one's)."""
    cpu = host_cpu()
    base = Probe(False, cpu.model, cpu.simd_level, cpu.expected_build)
    problem = cpu_problem(cpu)
    if problem is not None:
        base.reason = problem
        return base
    cmd = [python, str(SCRIPT), "--child"] + (["--models"] if models else [])
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        base.reason = f"the probe ({' '.join(cmd)}) did not finish within {timeout:.0f} s"
        return base
    if done.returncode < 0:
        sig = signal.Signals(-done.returncode).name
        base.reason = (
            f"loading vLLM's ops was killed by {sig}"
            + (
                " (an instruction this CPU lacks: a build for another CPU)"
                if sig == "SIGILL"
                else ""
            )
            + f"; last output: {_tail(done.stderr)}"
        )
        return base
    report = next(
        (ln.split(" ", 1)[1] for ln in done.stdout.splitlines() if ln.startswith("PARAVT_PROBE ")),
        None,
    )
    if done.returncode != 0 or report is None:
        if "No module named 'vllm'" in done.stderr:
            base.reason = f"vLLM is not installed in {python} (scripts/vllm-env.sh VENV builds it)"
        else:
            base.reason = f"loading vLLM failed (exit {done.returncode}): {_tail(done.stderr)}"
        return base
    seen = json.loads(report)
    return Probe(True, cpu.model, cpu.simd_level, cpu.expected_build, **seen)


def _tail(text: str, lines: int = 3) -> str:
    kept = [ln for ln in (text or "").strip().splitlines() if ln.strip()][-lines:]
    return " | ".join(kept) or "(nothing)"


def main(argv: list[str] | None = None) -> int:
    """Prints the probe's line (or JSON); exit 0 when vLLM loaded, 3 when it cannot run here."""
    parser = argparse.ArgumentParser(
        prog="scripts/vllm_probe.py", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--models", action="store_true", help="also import the Qwen-VL modules")
    parser.add_argument("--cpu-only", action="store_true", help="the CPU's SIMD level alone")
    parser.add_argument("--json", action="store_true", help="the report as JSON")
    opts = parser.parse_args(argv)
    if opts.child:
        _child()
        return 0
    if opts.cpu_only:
        cpu = host_cpu()
        report = {"cpu_model": cpu.model, "simd_level": cpu.simd_level,
                  "expected_build": cpu.expected_build, "problem": cpu_problem(cpu)}  # fmt: skip
        if opts.json:
            print(json.dumps(report))
        else:
            build = cpu.expected_build or "none"
            print(f"CPU: {cpu.model}; SIMD: {cpu.simd_level}; vLLM CPU ops it would load: {build}")
        return 0 if report["problem"] is None else EXIT_CANNOT_RUN
    seen = probe(models=opts.models)
    print(json.dumps(asdict(seen)) if opts.json else seen.line())
    return 0 if seen.ok else EXIT_CANNOT_RUN


if __name__ == "__main__":
    sys.exit(main())
