"""vLLM on any x86-64 CPU: paravt says which build of vLLM's ops a CPU gets and refuses a CPU that
none runs on (the library's ``cpu_problem``), and its environment probe (scripts/vllm_probe.py)
loads vLLM only through vLLM's own platform (never ``import vllm._C``, the AVX-512+bf16 build
that SIGILLs an AVX2-only EPYC).

The CPU texts below are the ``model name`` and the SIMD part of the ``flags`` line of three real
CPUs' ``/proc/cpuinfo``. The ``vllm`` tests load the real vLLM in a child process: as this host
is, and seeing an AVX2-only CPU (``tests/isa_avx2``), where vLLM must pick ``_C_AVX2`` itself.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest
from repo_files import load_repo_file

from paravt.errors import ConfigError
from paravt.rollout.vllm_platform import cpu_problem, host_cpu, parse_cpuinfo

#: the environment probe (scripts/vllm_probe.py): loads vLLM in a child, reports what it mapped
PROBE = load_repo_file("scripts/vllm_probe.py", "vllm_probe")
EXIT_CANNOT_RUN, main, probe = PROBE.EXIT_CANNOT_RUN, PROBE.main, PROBE.probe

REPO = Path(__file__).resolve().parents[2]
AVX2_SHIM = REPO / "tests" / "isa_avx2"

EPYC_ROME = """processor\t: 0
model name\t: AMD EPYC 7B12
flags\t\t: fpu vme sse sse2 ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt aes xsave avx f16c avx2 bmi2 sha_ni
"""
SAPPHIRE_RAPIDS = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8481C
flags\t\t: fpu sse sse2 avx avx2 avx512f avx512dq avx512bw avx512vl avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8
"""
SKYLAKE_X = """processor\t: 0
model name\t: Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz
flags\t\t: fpu sse sse2 avx avx2 fma avx512f avx512dq avx512cd avx512bw avx512vl
"""
SANDY_BRIDGE = """processor\t: 0
model name\t: Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz
flags\t\t: fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt aes xsave avx
"""


@pytest.mark.parametrize(
    ("text", "level", "build"),
    [
        (EPYC_ROME, "AVX2", "_C_AVX2"),
        (SKYLAKE_X, "AVX-512", "_C_AVX512"),
        (SAPPHIRE_RAPIDS, "AMX", "_C"),
        (SANDY_BRIDGE, "below AVX2", None),
    ],
)
def test_each_cpu_gets_the_build_vllms_platform_picks(text, level, build):
    cpu = parse_cpuinfo(text, "x86_64")
    assert (cpu.simd_level, cpu.expected_build) == (level, build)
    assert (cpu_problem(cpu) is None) == (build is not None)


def test_a_cpu_no_build_runs_on_is_one_line_naming_the_feature_and_the_fix():
    problem = cpu_problem(parse_cpuinfo(SANDY_BRIDGE, "x86_64"))
    assert problem is not None and "\n" not in problem
    assert "avx2" in problem and "E5-2670" in problem and "trainer.use_vllm=false" in problem
    # off x86-64 vLLM decides for itself; paravt does not guess
    assert cpu_problem(parse_cpuinfo(SANDY_BRIDGE, "aarch64")) is None


def test_require_vllm_refuses_such_a_cpu_before_anything_loads():
    from paravt.rollout.vllm import require_vllm
    from paravt.train.run import load_command_config, para_config

    args = para_config(load_command_config("cpu-smoke", ("trainer.use_vllm=true",)))
    with pytest.raises(ConfigError, match=r"needs AVX2 at least.*E5-2670"):
        require_vllm(args, cpu=parse_cpuinfo(SANDY_BRIDGE, "x86_64"))
    off = para_config(load_command_config("cpu-smoke", ("trainer.use_vllm=false",)))
    require_vllm(off, cpu=parse_cpuinfo(SANDY_BRIDGE, "x86_64"))  # not used: nothing checked


def test_nothing_in_the_repo_imports_a_build_of_vllms_ops_by_name():
    pattern = re.compile(r"^\s*(import\s+vllm\._C|from\s+vllm\._C|from\s+vllm\s+import\s+_C)")
    inline = re.compile(r"import\s+vllm\._C")  # a `python -c "..."` in a shell script
    offenders = []
    for path in REPO.rglob("*"):
        if ".git" in path.parts or ".venv" in path.parts or not path.is_file():
            continue
        if path.suffix == ".py":
            hits = [ln for ln in path.read_text().splitlines() if pattern.search(ln)]
        elif path.suffix == ".sh" or path.name == "run" and path.parent.name == ".ci":
            hits = [ln for ln in path.read_text().splitlines() if inline.search(ln)]
        else:
            continue
        offenders += [f"{path.relative_to(REPO)}: {ln.strip()}" for ln in hits]
    assert offenders == []


def test_the_cpu_report_of_this_host(capsys):
    cpu = host_cpu()
    code = main(["--cpu-only"])
    out = capsys.readouterr().out
    assert cpu.simd_level in out and (cpu.expected_build or "none") in out
    assert code == (0 if cpu_problem(cpu) is None else EXIT_CANNOT_RUN)


@pytest.mark.vllm
def test_vllm_loads_the_build_this_cpu_gets_through_its_platform():
    """The build is the one torch's feature queries (what vLLM asks) select: on this host's flags,
    or on the AVX2-only CPU that ``tests/isa_avx2`` makes this process and its children see."""
    import torch.cpu

    if not torch.cpu._is_avx512_supported():
        want = "_C_AVX2"
    else:
        want = "_C" if torch.cpu._is_avx512_bf16_supported() else "_C_AVX512"
        assert want == host_cpu().expected_build  # the flags paravt reads agree with torch
    seen = probe()
    assert seen.ok, seen.reason
    assert seen.platform == "CpuPlatform"
    assert seen.loaded == [f"{want}.abi3.so"]


@pytest.mark.vllm
def test_on_an_avx2_only_cpu_vllm_picks_its_avx2_build():
    """The child sees the CPU of an AVX2-only EPYC (torch's feature queries, which vLLM asks):
    vLLM must load ``_C_AVX2`` and nothing else — what `import vllm._C` killed with SIGILL."""
    env = dict(os.environ, PYTHONPATH=str(AVX2_SHIM), ATEN_CPU_CAPABILITY="avx2")
    seen = probe(env=env, models=True)
    assert seen.ok, seen.reason
    assert seen.loaded == ["_C_AVX2.abi3.so"]


def test_a_probe_killed_by_sigill_is_a_reason_not_a_dead_parent(tmp_path):
    """What an AVX-512 build does on an AVX2 CPU, delivered for real: the child dies of SIGILL,
    the caller gets the reason."""
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nkill -ILL $$\n")
    python.chmod(0o755)
    seen = probe(str(python))
    assert not seen.ok and "SIGILL" in seen.reason and "instruction this CPU lacks" in seen.reason


def test_a_python_without_vllm_says_so(tmp_path):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed in this environment")
    seen = probe(sys.executable)
    assert not seen.ok and "not installed" in seen.reason and "vllm-env.sh" in seen.reason
