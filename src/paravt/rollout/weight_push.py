"""Pushing the policy's weights into a vLLM server (server mode), behind one interface.

``push(step)`` is called on every trainer rank, once per optimizer step, before the step's first
generate call; it returns on every rank only once the server holds the step's weights. Only the
main process talks to the server. Its outcome is then exchanged, so a failed push raises the same
one-line ``WeightPushError`` on every rank (no rank waits in a later collective for one that
stopped).

Two ways, chosen by ``trainer.vllm_weight_push``:

- ``folder`` (the default; the one run here, on a CPU): the main process writes the policy as
  safetensors (``save_pretrained``: the checkpoint's own names, what vLLM loaded at start) into
  ``{vllm_push_dir}/step-N``, then asks the server to reload in place from that folder
  (``collective_rpc("reload_weights", weights_path=...)``, vLLM's layerwise in-place reload,
  which also redoes the CPU kernels' weight repacking) and resets its prefix cache. The previous
  step's folder is removed once the new one is loaded. Why this one: vLLM 0.32's own
  weight-transfer API (``/init_weight_transfer_engine``, ``/update_weights``) has NCCL and CUDA-IPC
  backends only, and ``collective_rpc`` takes JSON strings, not tensors (a tensor channel would
  need a worker extension installed in the server). A reload from a folder needs nothing on the
  server but dev mode, runs on any device, and works across hosts when the folder is shared. Its
  cost is a write and a read of the weights each step (bf16: 2 bytes a parameter), fine on a CPU
  or a small model, slow for a large one: there use ``nccl``. Under ZeRO-3 or FSDP the full state
  dict is gathered (a collective on every rank) before the main process writes it.
- ``nccl`` (GPUs; **not run here**: no CUDA on this machine): vLLM's own trainer-side engine
  (``vllm.distributed.weight_transfer``: ``NCCLTrainerWeightTransferEngine`` over
  ``HTTPVLLMWeightSyncClient``, the source ``ModuleSource(model)``), set up once with the
  server's ``/init_weight_transfer_engine`` and then one ``send_weights()`` a step. The server
  must be started with ``--weight-transfer-config '{"backend": "nccl"}'``; it needs vLLM in the
  training environment.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from paravt.errors import UserError
from paravt.rollout.lockstep import exchange

logger = logging.getLogger(__name__)


class WeightPushError(UserError):
    """The server did not take the policy's weights: the run stops on every rank."""


@dataclass(frozen=True)
class Pushed:
    """What a push left, the same on every rank: the folder the servers loaded (None: not a
    folder push) and the servers that hold the step's weights (None: every server)."""

    folder: str | None = None
    holders: list[str] | None = None


class WeightPush(Protocol):
    """What the server generator needs from a weight push."""

    def push(self, step: int) -> Pushed: ...


def _solo(shares: list) -> list:
    return shares


class FolderReloadPush:
    """The ``folder`` push (module doc).

    ``state_dict`` returns the full state dict on the main process (it is called on every rank:
    a collective under sharding); ``save`` writes ``(folder, state_dict)`` as a checkpoint;
    ``reload`` asks the server(s) to load a folder and may return the servers that did (a
    ``ServerPool``'s); ``gather`` is the all-gather of one object per rank (``None``: one
    process)."""

    def __init__(
        self,
        folder: str | Path,
        *,
        state_dict: Callable[[], dict],
        save: Callable[[Path, dict], None],
        reload: Callable[[str], list[str] | None],
        is_main: bool = True,
        gather: Callable[[list], list] | None = None,
        server: str = "",
    ):
        self.folder = Path(folder)
        self._state_dict, self._save, self._reload = state_dict, save, reload
        self.is_main = is_main
        self._gather = gather or _solo
        self.server = server
        self.pushed: list[int] = []  # steps pushed, for tests
        self._current: Path | None = None

    def push(self, step: int) -> Pushed:
        failure: str | None = None
        holders: list[str] | None = None
        cause: Exception | None = None
        try:
            sd = self._state_dict()
            if self.is_main:
                holders = self._write_and_reload(step, sd)
        except Exception as e:  # noqa: BLE001 - every rank must hear of it (module doc)
            # one line here; the traceback rides on the error this rank raises (--debug)
            logger.error("weight push of step %d failed: %s: %s", step, type(e).__name__, e)
            failure, cause = f"{type(e).__name__}: {e}", e
        outcomes = [o or (None, None) for o in exchange(self._gather, (failure, holders))]
        failed = [(r, f) for r, (f, _) in enumerate(outcomes) if f]
        if failed:
            rank, why = failed[0]
            raise WeightPushError(
                f"weight push of step {step} to the vLLM server {self.server} failed on rank "
                f"{rank}: {why}"
            ) from cause
        self.pushed.append(step)
        folder = self.folder / f"step-{step}"
        return Pushed(str(folder.resolve()), outcomes[0][1])

    def _write_and_reload(self, step: int, state_dict: dict) -> list[str] | None:
        self.folder.mkdir(parents=True, exist_ok=True)
        final = self.folder / f"step-{step}"
        tmp = self.folder / f".step-{step}.partial"
        for stale in (tmp, final):
            if stale.exists():
                shutil.rmtree(stale)
        self._save(tmp, state_dict)
        tmp.rename(final)
        holders = self._reload(str(final.resolve()))
        self._current = final
        for stale in self.folder.glob("step-*"):  # the previous step's, or a stopped run's
            if stale != final:
                shutil.rmtree(stale, ignore_errors=True)
        return holders


def save_checkpoint(model: Any) -> Callable[[Path, dict], None]:
    """``save(folder, state_dict)`` for ``FolderReloadPush``: ``model.save_pretrained`` with the
    gathered state dict, safetensors only (no tokenizer: the server keeps its own)."""

    def save(folder: Path, state_dict: dict) -> None:
        model.save_pretrained(str(folder), state_dict=state_dict, safe_serialization=True)

    return save


class NCCLPush:
    """The ``nccl`` push (module doc). **Not run here** (no CUDA): written against vLLM 0.32's
    ``vllm.distributed.weight_transfer`` API; the API test checks the names and signatures it
    uses exist in every accepted release."""

    def __init__(
        self,
        base_url: str,
        model: Any,
        *,
        rank: int,
        master_address: str,
        master_port: int,
        server_world_size: int,
        gather: Callable[[list], list] | None = None,
    ):
        from vllm.distributed.weight_transfer.base import ModuleSource
        from vllm.distributed.weight_transfer.clients import HTTPVLLMWeightSyncClient
        from vllm.distributed.weight_transfer.nccl_engine import (
            NCCLTrainerInitInfo,
            NCCLTrainerWeightTransferEngine,
        )

        self.server = base_url
        self._gather = gather or _solo
        info = NCCLTrainerInitInfo(
            master_address=master_address,
            master_port=int(master_port),
            world_size=1 + int(server_world_size),
            rank=int(rank),
        )
        try:
            self.engine = NCCLTrainerWeightTransferEngine.trainer_init(
                info, client=HTTPVLLMWeightSyncClient(base_url), source=ModuleSource(model)
            )
        except Exception as e:  # noqa: BLE001 - re-raised typed, with the server named
            raise WeightPushError(
                f"cannot open the NCCL weight transfer to the vLLM server {base_url} ({e}); start "
                'it with --weight-transfer-config \'{"backend": "nccl"}\', or set '
                "trainer.vllm_weight_push=folder"
            ) from e
        self.pushed: list[int] = []

    def push(self, step: int) -> Pushed:
        failure: str | None = None
        try:
            self.engine.send_weights()
        except Exception as e:  # noqa: BLE001 - every rank must hear of it; logged
            logger.exception("NCCL weight push of step %d failed", step)
            failure = f"{type(e).__name__}: {e}"
        failed = [f for f in exchange(self._gather, failure) if f]
        if failed:
            raise WeightPushError(
                f"weight push of step {step} to the vLLM server {self.server} failed: {failed[0]}"
            )
        self.pushed.append(step)
        return Pushed()
