"""Pushing the policy's weights into a vLLM server (server mode), behind one interface.

``push(step)`` is called on every trainer rank, once per optimizer step, before the step's first
generate call, and returns what it left (``Pushed``: the folder the servers loaded, the servers
that hold the weights; with ``wait`` set, a push still landing); ``settle()`` is called on every
rank once the step's old and reference log-probs are computed, before its optimizer step
(``ServerGeneration.settle``, from ``ParaGRPOTrainer._generate_and_score_completions``); the
weights must not change in between. By the time ``settle`` returns, on every rank, the servers
hold the step's weights; no request is sent under them before they do. A failed push raises the
same one-line ``WeightPushError`` on every rank (its outcome is exchanged), so no rank waits in a
later collective for one that stopped, and no rank goes on with weights the server does not hold.

What is sent (both ways): every tensor whole, in the serving dtype (the server's own, read from
its ``/server_info``, else ``trainer.vllm_dtype``), gathered bucket by bucket on every rank
(``paravt.rollout.weight_gather``: ZeRO-3 partitions and FSDP2 shards, at most
``trainer.vllm_push_bucket_mb`` gathered at a time), kept by trainer rank 0 only.

Two ways, chosen by ``trainer.vllm_weight_push``:

- ``folder`` (the default; the one run here, on a CPU): rank 0 writes each gathered bucket as a
  safetensors shard of ``{vllm_push_dir}/step-N`` (the modules' names, the checkpoint's; an
  index ``model.safetensors.index.json``), ``trainer.vllm_push_threads`` shards at once, while
  the next bucket is gathered (tensors already whole on the host are handed over as views of the
  live weights and cast by the writers, into cast buffers kept from push to push: ``Scratch``);
  then asks the server to reload in place from that folder (``collective_rpc("reload_weights",
  weights_path=...)``, vLLM's layerwise in-place reload, which also redoes the CPU kernels'
  weight repacking) and resets its caches; with several servers, every one that answers
  (``ServerPool.reload_weights``). The other ``step-*`` folders (the previous step's, a stopped
  run's) are removed once the new one is loaded. With ``trainer.vllm_push_overlap`` (the
  default) ``push`` returns once the weights are gathered: rank 0 finishes the writes and the
  reload on a thread of its own while the learner goes on — in the synchronous loop the
  rollout's first-round video work, with bounded staleness the rollout hand-over and the old and
  reference log-prob passes — and its outcome reaches every rank over a gloo group of its own
  (``outcome_broadcast``), with the servers that took it. ``push`` returns a ``Pushed`` whose
  ``wait`` blocks until then: ``ServerGeneration`` has every sampling request wait for it and
  then tells its server pool which servers hold the weights, so a request made under the new
  version is sent only once they have loaded it; ``settle`` waits for it on the main thread and
  then runs the weights check (``vllm_check_weights``) against the policy's side of it, taken
  once the weights were gathered (``reference``). With bounded staleness the gate resumes at the
  new version when ``push`` returns, and the producer's requests under that version wait here
  like any other, so a turn's version is the weights that answered it. The price, where the
  weights are not whole on the host already (GPUs, FSDP2, ZeRO-3): rank 0 holds the gathered
  model (serving dtype) in host memory until it is written. Without overlap a push holds at most
  ``threads + 1`` gathered buckets there and returns once the server holds the weights.

  Why a folder: vLLM 0.32's own weight-transfer API (``/init_weight_transfer_engine``,
  ``/update_weights``) has NCCL and CUDA-IPC backends only, and ``collective_rpc`` takes JSON
  strings, not tensors. A reload from a folder needs nothing on the server but dev mode, runs on
  any device, and works across hosts when the folder is shared. Its cost is a write and a read
  of the weights each step (``benchmarks/bench_weight_push.py`` measures it).
- ``nccl`` (GPUs; **not run here**: no CUDA on this machine). Trainer rank 0 alone joins vLLM's
  NCCL group, as its rank 0: the source of the broadcast and the group's master (its own
  address, a free port), the server's workers at ranks 1..W (``rank_offset`` 1). Every rank
  takes part in the bucketed gather; rank 0 streams the tensors to the workers (packed
  broadcast), the others only drive the gathers. Reused from TRL 1.16
  (``trl.experimental.async_grpo``): ``WeightTransferClient`` (the rendezvous on rank 0 — its
  address, a free port, ``rank_offset`` 1, the server's world size + 1 —, the dtype check,
  ``start_weight_update`` / ``update_weights`` with the packed broadcast on a thread /
  ``finish_weight_update``, pause and resume) over its ``VLLMClient``. Not reused: its trainer's
  ``_streaming_iter`` (one parameter at a time, FSDP2 only: no ZeRO-3 gather, no cast to the
  serving dtype) and ``_iter_vllm_named_params`` (see ``weight_gather``), nor vLLM's own
  ``NCCLTrainerWeightTransferEngine``, which does the same rendezvous as TRL's client. The
  server must be started with ``--weight-transfer-config '{"backend": "nccl"}'``; the trainers
  need vLLM installed. Synchronous: ``push`` returns once the workers hold the weights. Rank 0
  pauses the server (TRL's keep mode, which freezes every request on it) only after an exchange
  every rank joins once its own requests have ended, and resumes a server a failed send left
  paused (``NCCLPush.push`` says why). Requests under way go on across the push (frozen by the
  keep-mode pause, resumed after it).
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from paravt.errors import UserError
from paravt.rollout.lockstep import exchange
from paravt.rollout.weight_gather import Bucket, gathered_buckets, manifest, named_tensors

__all__ = ["FolderReloadPush", "Pushed", "WeightPushError", "save_checkpoint"]

logger = logging.getLogger(__name__)

#: the folder push's index of shards (Hugging Face's name; vLLM's loader reads it)
INDEX_NAME = "model.safetensors.index.json"


class WeightPushError(UserError):
    """The server did not take the policy's weights: the run stops on every rank."""


@dataclass(frozen=True)
class Pushed:
    """What a push left, the same on every rank: the folder the servers loaded (None: not a
    folder push) and the servers that hold the step's weights (None: every server). ``wait``:
    set while an overlapped push is landing; it blocks until the servers hold the weights and
    returns the landed ``Pushed`` (``WeightPushError`` when it failed, each time it is called)."""

    folder: str | None = None
    holders: list[str] | None = None
    wait: Callable[[], Pushed] | None = field(default=None, compare=False)


class WeightPush(Protocol):
    """What the server generator and the trainer need from a weight push (module doc)."""

    def push(self, step: int) -> Pushed: ...

    def settle(self) -> None: ...


def _solo(shares: list) -> list:
    return shares


def _why(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".replace("\n", " ")


def _raise_first(
    server: str, step: int, failures: list, cause: BaseException | None = None
) -> None:
    """``WeightPushError`` naming the first rank whose outcome is a failure (the same on every
    rank: the outcomes were exchanged); on the rank that failed, its error rides on it (one log
    line was written; ``--debug`` shows the traceback)."""
    failed = [(r, f) for r, f in enumerate(failures) if f]
    if failed:
        rank, why = failed[0]
        raise WeightPushError(
            f"weight push of step {step} to the vLLM server {server} failed on rank {rank}: {why}"
        ) from cause


@dataclass
class PushTimes:
    """What the last push cost: seconds the caller was held (``blocked_s``: the gather, and
    without overlap the rest too), seconds until the server held the weights (``total_s``),
    bytes written, shards, and the most gathered bytes rank 0 held at once."""

    step: int
    blocked_s: float = 0.0
    total_s: float = 0.0
    bytes: int = 0
    shards: int = 0
    peak_held_bytes: int = 0


class _Outcome:
    """One overlapped push's outcome on this rank: why it failed (None: loaded), and the servers
    that took it."""

    def __init__(self, step: int, folder: str):
        self.step, self.folder = step, folder
        self._done = threading.Event()
        self.failure: str | None = None
        self.holders: list[str] | None = None
        self.cause: BaseException | None = None  # this rank's own error, if it failed here

    def set(self, failure: str | None, holders: list[str] | None) -> None:
        self.failure, self.holders = failure, holders
        self._done.set()

    def wait(self) -> str | None:
        self._done.wait()
        return self.failure

    @property
    def known(self) -> bool:
        return self._done.is_set()


class Scratch:
    """Byte buffers the writers cast buckets into, kept from push to push (``Bucket.ready_into``):
    as many as writers cast at once, each grown to the largest bucket it took."""

    def __init__(self):
        self._free: list[bytearray] = []
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> bytearray:
        with self._lock:
            fits = [b for b in self._free if len(b) >= nbytes]
            if fits:
                buf = min(fits, key=len)
                self._free.remove(buf)
                return buf
            if self._free:  # too small: let the smallest go, this one replaces it
                self._free.remove(min(self._free, key=len))
        return bytearray(nbytes)

    def give(self, buf: bytearray) -> None:
        with self._lock:
            self._free.append(buf)

    @property
    def bytes(self) -> int:
        with self._lock:
            return sum(len(b) for b in self._free)


class ShardWriter:
    """Buckets written as safetensors shards of ``folder`` on ``threads`` threads, then the index.

    ``held`` bounds the buckets handed over and not yet written (``submit`` waits for a slot);
    None: no bound. A bucket the gather left to cast is cast into a ``scratch`` buffer."""

    def __init__(self, folder: Path, threads: int, held: int | None, scratch: Scratch):
        self.folder, self._scratch = folder, scratch
        self._pool = ThreadPoolExecutor(max(1, int(threads)), thread_name_prefix="paravt-push")
        self._slots = threading.BoundedSemaphore(held) if held else None
        self._lock = threading.Lock()
        self._futures: list[Future] = []
        self.weight_map: dict[str, str] = {}
        self.bytes = 0
        self.held_bytes = 0
        self.peak_held_bytes = 0

    def submit(self, bucket: Bucket) -> None:
        if self._slots is not None:
            self._slots.acquire()
        name = f"model-{bucket.index + 1:05d}.safetensors"
        with self._lock:
            self.held_bytes += bucket.nbytes
            self.peak_held_bytes = max(self.peak_held_bytes, self.held_bytes)
            self.weight_map.update(dict.fromkeys(bucket.names, name))
            self.bytes += bucket.nbytes
        self._futures.append(self._pool.submit(self._write, self.folder / name, bucket))

    def _write(self, path: Path, bucket: Bucket) -> None:
        from safetensors.torch import save_file  # with torch: the rollout's optional stack

        buf = None
        try:
            if bucket.needs_cast() and all(t.device.type == "cpu" for t in bucket.tensors):
                buf = self._scratch.take(bucket.span())  # cast here, on this writer's thread
                tensors = bucket.ready_into(buf)
            else:
                tensors = bucket.ready()
            save_file(dict(zip(bucket.names, tensors, strict=True)), str(path),
                      metadata={"format": "pt"})  # fmt: skip
            del tensors
        finally:
            if buf is not None:
                self._scratch.give(buf)
            bucket.tensors.clear()  # the copy is let go of as soon as it is on disk
            with self._lock:
                self.held_bytes -= bucket.nbytes
            if self._slots is not None:
                self._slots.release()

    def finish(self) -> None:
        """Wait for every shard (the first failure is raised), then write the index."""
        try:
            for f in self._futures:
                f.result()
        finally:
            self._pool.shutdown(wait=True)
        index = {
            "metadata": {"total_size": self.bytes},
            "weight_map": dict(sorted(self.weight_map.items())),
        }
        (self.folder / INDEX_NAME).write_text(json.dumps(index, indent=1) + "\n")

    def abort(self) -> None:
        for f in self._futures:
            f.cancel()
        self._pool.shutdown(wait=True)


class FolderReloadPush:
    """The ``folder`` push (module doc).

    ``buckets()`` yields the gathered buckets (``weight_gather.gathered_buckets``: called on
    every rank, tensors on the main process only); ``reload`` asks the server(s) to load a
    folder and may return the servers that did (a ``ServerPool``'s);
    ``gather`` is the all-gather of one object per rank (``None``: one process); ``threads``
    shards are written at once; ``overlap`` returns from ``push`` before the writes and the
    reload end (module doc), ``broadcast`` carrying rank 0's outcome to the others
    (``outcome_broadcast``; needed with several ranks) and ``check(step)`` the weights check
    ``settle`` runs. ``reference()``: what the weights check needs of the policy (its logprobs
    of the probe), taken on every rank once the weights are gathered, before any server
    reloads them (with or without overlap): a server is compared with the step's policy from
    the moment it may hold the step's weights.

    Without ``buckets`` the push is the one before the bucketed gather (kept for callers that
    hold a state dict, and as the benchmark's baseline): ``state_dict()`` returns the full state
    dict on the main process (a collective under sharding), ``save(folder, state_dict)`` writes
    it, synchronously, in the learner's dtype."""

    def __init__(
        self,
        folder: str | Path,
        *,
        reload: Callable[[str], list[str] | None],
        state_dict: Callable[[], dict] | None = None,
        save: Callable[[Path, dict], None] | None = None,
        is_main: bool = True,
        gather: Callable[[list], list] | None = None,
        server: str = "",
        buckets: Callable[[], Iterator[Bucket]] | None = None,
        threads: int = 4,
        overlap: bool = False,
        broadcast: Callable[[Any], Any] | None = None,
        check: Callable[[int], None] | None = None,
        reference: Callable[[], None] | None = None,
    ):
        if buckets is None and (state_dict is None or save is None):
            raise ValueError("FolderReloadPush needs buckets, or state_dict and save")
        self.folder = Path(folder)
        self._state_dict, self._save, self._reload = state_dict, save, reload
        self.is_main = is_main
        self._gather = gather or _solo
        self.server = server
        self._buckets, self.threads = buckets, int(threads)
        self.overlap = bool(overlap and buckets is not None)
        self._broadcast, self.check, self.reference = broadcast, check, reference
        self.pushed: list[int] = []  # steps the server holds, for tests
        self.last: PushTimes | None = None
        self._current: Path | None = None
        self._pending: _Outcome | None = None  # the overlapped push not settled yet
        self._pushing = False  # inside push (``pushing``)
        self._last: _Outcome | None = None  # the last overlapped push
        self.scratch = Scratch()  # the writers' cast buffers, kept from push to push

    # -- the protocol ------------------------------------------------------------------------
    def push(self, step: int) -> Pushed:
        if self._pending is not None:  # no settle since the last push: wait for it now
            logger.warning("push of step %d: the previous push was not settled; its weights "
                           "check is skipped", step)  # fmt: skip
            self._take_outcome()
        t0 = time.perf_counter()
        self.last = PushTimes(step)
        if self._buckets is None:
            pushed = self._push_state_dict(step)
            self.last.blocked_s = self.last.total_s = time.perf_counter() - t0
            self.pushed.append(step)
            return pushed
        self._pushing = True
        try:
            return self._push_buckets(step, t0)
        finally:
            self._pushing = False

    @property
    def pushing(self) -> bool:
        """A push is under way on this rank: from its start until its outcome is known (an
        overlapped one: until the servers hold its weights, or it failed). Meanwhile the
        weights check's ``reference`` and the servers' folder may belong to different steps, so
        a server that answers again waits to rejoin (``rejoiner``)."""
        return self._pushing or (self._last is not None and not self._last.known)

    def _push_buckets(self, step: int, t0: float) -> Pushed:
        assert self.last is not None
        failure, cause, job, holders = None, None, None, None
        try:
            job = self._gather_and_write(step)
            if self.reference is not None:  # the policy's side of the check, before the reload
                self.reference()
            if job is not None and not self.overlap:
                holders = self._finish(job, step)
        except Exception as e:  # noqa: BLE001 - every rank must hear of it (module doc)
            logger.error("weight push of step %d failed: %s", step, _why(e))  # the cause rides
            failure, cause = _why(e), e
        outcomes = [o or (None, None) for o in exchange(self._gather, (failure, holders))]
        try:
            _raise_first(self.server, step, [f for f, _ in outcomes], cause)
        except WeightPushError:
            if job is not None:  # a rank failed: this one's writes stop (none left if finished)
                job[0].abort()
            raise
        self.last.blocked_s = time.perf_counter() - t0
        folder = str((self.folder / f"step-{step}").resolve())
        if self.overlap:
            self._pending = self._last = outcome = _Outcome(step, folder)
            self._go_on(job, step, t0)
            return Pushed(folder, None, wait=lambda: self._landed(outcome))
        self.last.total_s = self.last.blocked_s
        self.pushed.append(step)
        return Pushed(folder, outcomes[0][1])

    def loaded(self) -> Pushed:
        """The last overlapped push, once the servers hold its weights (``WeightPushError`` if it
        failed); ``Pushed()`` when there was none. Local (no collective): any thread may call
        it."""
        return self._landed(self._last) if self._last is not None else Pushed()

    def settle(self) -> None:
        """On every rank, on the main thread, before the optimizer step: wait for the overlapped
        push under way, raise on every rank if it failed, then run the weights check."""
        if self._pending is None:
            return
        step = self._take_outcome()
        if self.check is not None:
            self.check(step)

    # -- the parts ---------------------------------------------------------------------------
    def _landed(self, outcome: _Outcome) -> Pushed:
        failure = outcome.wait()
        if failure:
            raise WeightPushError(
                f"weight push of step {outcome.step} to the vLLM server {self.server} failed on "
                f"rank 0: {failure}"
            ) from outcome.cause
        return Pushed(outcome.folder, outcome.holders)

    def _take_outcome(self) -> int:
        pending = self._pending
        assert pending is not None
        try:
            self._landed(pending)
        finally:
            self._pending = None
        self.pushed.append(pending.step)
        return pending.step

    def _gather_and_write(self, step: int) -> tuple[ShardWriter, Path] | None:
        """Every rank: drive the gathers. Main process: hand each bucket to the shard writer as
        it comes (the next bucket is gathered while the last ones are written)."""
        assert self._buckets is not None
        if not self.is_main:
            for _ in self._buckets():
                pass
            return None
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".step-{step}.partial"
        for stale in (tmp, self.folder / f"step-{step}"):
            if stale.exists():
                shutil.rmtree(stale)
        tmp.mkdir()
        writer = ShardWriter(
            tmp, self.threads, None if self.overlap else self.threads, self.scratch
        )
        try:
            for bucket in self._buckets():
                writer.submit(bucket)
        except BaseException:
            writer.abort()
            raise
        return writer, tmp

    def _finish(self, job: tuple[ShardWriter, Path], step: int) -> list[str] | None:
        """Main process: the shards and the index on disk, the folder in place, the server(s)
        reloaded from it (those that did), the other ``step-*`` folders removed."""
        writer, tmp = job
        writer.finish()
        final = self.folder / f"step-{step}"
        tmp.rename(final)
        assert self.last is not None
        self.last.bytes, self.last.shards = writer.bytes, len(set(writer.weight_map.values()))
        self.last.peak_held_bytes = writer.peak_held_bytes
        holders = self._reload(str(final.resolve()))
        self._drop_others(final)
        return holders

    def _go_on(self, job: tuple[ShardWriter, Path] | None, step: int, t0: float) -> None:
        """Overlap: the main process finishes on a thread and tells the others; they wait for
        its word on a thread each."""
        pending = self._pending
        assert pending is not None

        def finish() -> None:
            failure, holders = None, None
            try:
                assert job is not None
                holders = self._finish(job, step)
                assert self.last is not None
                self.last.total_s = time.perf_counter() - t0
            except Exception as e:  # noqa: BLE001 - the outcome every rank reads
                logger.error("weight push of step %d failed: %s", step, _why(e))  # cause rides
                failure, pending.cause = _why(e), e
            pending.set(*self._tell((failure, holders)))

        def hear() -> None:
            pending.set(*self._tell((None, None)))

        name = f"paravt-push-{step}"
        threading.Thread(target=finish if self.is_main else hear, name=name, daemon=True).start()

    def _tell(self, outcome: tuple[str | None, list[str] | None]) -> tuple:
        """Rank 0's ``(failure, holders)``, on every rank (one process: its own)."""
        if self._broadcast is None:
            return outcome
        try:
            return tuple(self._broadcast(outcome))
        except Exception as e:  # noqa: BLE001 - an outcome that never arrived fails the push
            logger.error("the weight push's outcome did not arrive: %s", _why(e))
            return (outcome[0] or f"its outcome did not reach every rank ({_why(e)})", None)

    def _push_state_dict(self, step: int) -> Pushed:
        failure, cause, holders = None, None, None
        try:
            assert self._state_dict is not None
            sd = self._state_dict()
            if self.is_main:
                holders = self._write_and_reload(step, sd)
        except Exception as e:  # noqa: BLE001 - every rank must hear of it (module doc)
            logger.error("weight push of step %d failed: %s", step, _why(e))  # the cause rides
            failure, cause = _why(e), e
        outcomes = [o or (None, None) for o in exchange(self._gather, (failure, holders))]
        _raise_first(self.server, step, [f for f, _ in outcomes], cause)
        return Pushed(str((self.folder / f"step-{step}").resolve()), outcomes[0][1])

    def _write_and_reload(self, step: int, state_dict: dict) -> list[str] | None:
        assert self._save is not None
        self.folder.mkdir(parents=True, exist_ok=True)
        final = self.folder / f"step-{step}"
        tmp = self.folder / f".step-{step}.partial"
        for stale in (tmp, final):
            if stale.exists():
                shutil.rmtree(stale)
        self._save(tmp, state_dict)
        tmp.rename(final)
        holders = self._reload(str(final.resolve()))
        self._drop_others(final)
        return holders

    def _drop_others(self, final: Path) -> None:
        """The ``step-*`` folders but ``final`` (the previous step's, or a stopped run's)."""
        self._current = final
        for stale in self.folder.glob("step-*"):
            if stale != final:
                shutil.rmtree(stale, ignore_errors=True)


def save_checkpoint(model: Any) -> Callable[[Path, dict], None]:
    """``save(folder, state_dict)`` for ``FolderReloadPush`` without buckets:
    ``model.save_pretrained`` with the gathered state dict, safetensors only (no tokenizer: the
    server keeps its own)."""

    def save(folder: Path, state_dict: dict) -> None:
        model.save_pretrained(str(folder), state_dict=state_dict, safe_serialization=True)

    return save


def outcome_broadcast(timeout_s: float) -> Callable[[Any], Any]:
    """Rank 0's word to every rank, over a gloo group of its own (formed here: call it on every
    rank, in the same order as the other groups): the overlapped push's outcome travels from
    threads while the main threads run their own collectives on the default group."""
    from datetime import timedelta

    import torch.distributed as dist

    group = dist.new_group(backend="gloo", timeout=timedelta(seconds=float(timeout_s)))
    assert isinstance(group, dist.ProcessGroup)  # every rank is a member

    def broadcast(value: Any) -> Any:
        box = [value]
        dist.broadcast_object_list(box, src=0, group=group)
        return box[0]

    return broadcast


class NCCLPush:
    """The ``nccl`` push (module doc). **Not run here** (no CUDA): written against TRL 1.16's
    ``WeightTransferClient`` and vLLM 0.32's weight-transfer endpoints; the API test checks the
    vLLM names it calls exist in every accepted release.

    ``model()`` returns the policy (unwrapped); ``dtype`` the serving ``torch.dtype`` (None: the
    learner's); ``device`` where rank 0 casts what it sends (its GPU); ``after()`` runs on rank
    0 once the workers hold the weights (the cache resets)."""

    def __init__(
        self,
        base_url: str,
        model: Callable[[], Any],
        *,
        is_main: bool,
        bucket_bytes: int,
        device: Any,
        dtype: Any = None,
        gather: Callable[[list], list] | None = None,
        after: Callable[[], None] | None = None,
        timeout_s: float = 1800.0,
    ):
        self.server = base_url
        self._model, self.is_main, self.bucket_bytes = model, is_main, int(bucket_bytes)
        self.device, self.dtype = device, dtype
        self._gather = gather or _solo
        self._after, self.timeout_s = after, float(timeout_s)
        self.transfer: Any = None  # TRL's WeightTransferClient: rank 0, from the first push
        self.pushed: list[int] = []

    def push(self, step: int) -> Pushed:
        """Every rank calls it at the start of a step (with bounded staleness, its
        ``PolicyGate`` paused for new turns; the running ones go on). Rank 0 pauses the server
        only after an exchange every rank has joined: TRL's pause is ``/pause?mode=keep``, which
        freezes every request on the server, the other ranks' included. When each rank drained
        its own requests before its push, rank 0 paused as soon as its own had ended and rank 1
        waited for a frozen request until its gate timed out (2 ranks, k = 2;
        tests/train/test_push_ranks.py); no rank waits for its requests any more, and the
        exchange keeps rank 0 from pausing a server another rank is still starting a push
        against. A server paused by a failed send is resumed before the error is raised, or the
        error says it could not be."""
        model = self._model()
        failure: str | None = None
        cause: BaseException | None = None
        if self.is_main and self.transfer is None:  # 1. rank 0: the group (first push)
            try:
                self.transfer = self._open(model)
            except Exception as e:  # noqa: BLE001 - re-raised on every rank below
                logger.error("NCCL weight push of step %d: no transfer: %s", step, _why(e))
                failure, cause = _why(e), e
        # every rank is at its push and rank 0 has its group: only now may the server be
        # paused; no rank enters a gather rank 0 will not join
        _raise_first(self.server, step, exchange(self._gather, failure), cause)
        paused = False
        transfer = self.transfer  # rank 0's, opened above (the push stopped there otherwise)
        if self.is_main:  # 2. rank 0 pauses the server
            assert transfer is not None
            try:
                transfer.pause()
                paused = True
            except Exception as e:  # noqa: BLE001 - re-raised on every rank below
                logger.error("NCCL weight push of step %d: no pause: %s", step, _why(e))
                failure, cause = _why(e) + self._resume_after_failure(), e
        _raise_first(self.server, step, exchange(self._gather, failure), cause)
        try:  # 3. every rank gathers; rank 0 sends and resumes the server
            pairs = named_tensors(gathered_buckets(
                model, dtype=self.dtype, bucket_bytes=self.bucket_bytes, keep=self.is_main,
                device=self.device,
            ))  # fmt: skip
            if self.is_main:
                assert transfer is not None
                transfer.send_weights(pairs)
                transfer.resume()
                paused = False
                if self._after is not None:
                    self._after()
            else:
                for _ in pairs:
                    pass
        except Exception as e:  # noqa: BLE001 - every rank must hear of it
            logger.error("NCCL weight push of step %d failed: %s", step, _why(e))
            failure, cause = _why(e) + (self._resume_after_failure() if paused else ""), e
        _raise_first(self.server, step, exchange(self._gather, failure), cause)
        self.pushed.append(step)
        return Pushed()

    def _resume_after_failure(self) -> str:
        """Resume the server a failed send left paused (TRL leaves it so); what became of it, as
        the tail of the run's one line."""
        try:
            assert self.transfer is not None
            self.transfer.resume()
        except Exception as e:  # noqa: BLE001 - said in the line, the run stops anyway
            return (
                f"; the server is left PAUSED, resuming it failed ({_why(e)}): POST "
                f"{self.server}/resume before sampling from it again"
            )
        return "; the server was resumed"

    def settle(self) -> None:
        """Nothing to wait for: ``push`` returns once the workers hold the weights."""

    def _open(self, model: Any) -> Any:
        from trl.experimental.async_grpo.vllm_client import VLLMClient
        from trl.experimental.async_grpo.weight_transfer import WeightTransferClient

        names, dtypes, shapes = manifest(model, self.dtype)
        transfer = WeightTransferClient(
            vllm_client=VLLMClient(self.server, self.timeout_s),
            weight_update_info={"names": names, "dtype_names": dtypes, "shapes": shapes},
            weight_sync_timeout=int(self.timeout_s),
        )
        try:
            transfer.init_weight_transfer()
        except Exception as e:  # noqa: BLE001 - re-raised typed, with the fix
            raise WeightPushError(
                f"cannot open the NCCL weight transfer to the vLLM server {self.server} ({e}); "
                'start it with --weight-transfer-config \'{"backend": "nccl"}\' and '
                "VLLM_SERVER_DEV_MODE=1, or set trainer.vllm_weight_push=folder"
            ) from e
        return transfer
