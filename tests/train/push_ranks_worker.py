"""One rank of ``test_push_ranks`` (torchrun, 2 gloo ranks, CPU). ``argv``: output folder, the
keep-pause stand-in's URL, and optionally a fault (``rank1-dies``: rank 1 is SIGKILLed inside
the push, after rank 0 paused the server).

Each rank runs paravt's own bounded-staleness push path: a ``VLLMBackend`` whose ``gate`` is a
``PolicyGate``, its ``sync_to`` pausing the gate and then calling the generator's push, an
``NCCLPush`` of a tiny Qwen3-VL. Rank 0's NCCL transfer is replaced by one that does what TRL's
``WeightTransferClient`` does to the server around the send (``/pause?mode=keep``, the tensors
consumed, ``/resume``): no NCCL on this machine. Rank 1 has one request in flight (3 s of
server time, held under a turn of its gate, as ``VLLMBackend._alone`` holds it) when both ranks
start the push. Each rank writes ``rank{r}.json``: its error (type and message) if the push
failed, the versions, and how long ``sync_to`` took.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist

from paravt.models.tiny import build_tiny
from paravt.rollout.gate import PolicyGate
from paravt.rollout.vllm import VLLMBackend
from paravt.rollout.weight_push import NCCLPush

WORK_S = 3.0  # server seconds rank 1's request needs
PAUSE_TIMEOUT_S = (
    12.0  # max_staleness_pause_s: the gate waited this long before it stopped draining
)


def post(url: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(
        url, data=json.dumps(body or {}).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=120) as reply:
        return json.loads(reply.read())


def gather_object(shares: list) -> list:
    out: list = [None] * dist.get_world_size()
    dist.all_gather_object(out, shares)
    return [x for part in out for x in part]


class KeepPauseTransfer:
    """Rank 0's transfer: TRL's ``WeightTransferClient`` calls on the server, the NCCL send left
    out (the tensors are consumed)."""

    def __init__(self, url: str):
        self.url = url

    def pause(self) -> None:
        post(f"{self.url}/pause?mode=keep")

    def send_weights(self, pairs) -> None:
        for _ in pairs:
            pass

    def resume(self) -> None:
        post(f"{self.url}/resume")


class PushingGenerator:
    """The server generator's part ``sync_to`` uses: ``sync_weights`` pushes."""

    mode = "server"
    collective = False

    def __init__(self, push: NCCLPush):
        self.push, self.step, self.generation_kwargs = push, 0, {}

    def sync_weights(self) -> None:
        self.step += 1
        self.push.push(self.step)


def die_mid_push() -> None:
    """``rank1-dies``: this rank is SIGKILLed inside the push, after rank 0 has paused the
    server (its tensors are being gathered), as a rank lost to the OOM killer would be."""
    import signal

    import paravt.rollout.weight_push as weight_push

    def killed(buckets):
        os.kill(os.getpid(), signal.SIGKILL)

    weight_push.named_tensors = killed


def gate_closed(gate: PolicyGate) -> bool:
    """No new turn starts: the rollouts stop with the run."""
    from paravt.rollout.gate import GateClosedError

    try:
        with gate.turn():
            return False
    except GateClosedError:
        return True


def main() -> None:
    out, url = Path(sys.argv[1]), sys.argv[2]
    fault = sys.argv[3] if len(sys.argv) > 3 else "none"
    dist.init_process_group("gloo", timeout=timedelta(seconds=90))
    rank = dist.get_rank()
    model, processor = build_tiny("qwen3-vl", seed=5)
    push = NCCLPush(
        url, lambda: model, is_main=rank == 0, bucket_bytes=1 << 20, device="cpu",
        dtype=torch.bfloat16, gather=gather_object,
    )  # fmt: skip
    if rank == 0:
        push.transfer = KeepPauseTransfer(url)
    if fault == "rank1-dies" and rank == 1:
        die_mid_push()
    backend = VLLMBackend(PushingGenerator(push), processor, world_size=2, gather=gather_object)
    backend.gate, backend.loaded_step = PolicyGate(0), 0
    report: dict = {"rank": rank}
    if rank == 1:

        def request() -> None:
            with backend.gate.turn() as version:
                post(f"{url}/generate", {"work_s": WORK_S, "who": "rank1"})
                report["request_version"] = version

        def finished() -> None:  # the request may outlive the push: wait for it before leaving
            thread.join(60)

        thread = threading.Thread(target=request, daemon=True)
        thread.start()
        time.sleep(0.5)  # the request is on the server
    dist.barrier()
    t0 = time.perf_counter()
    try:
        backend.sync_to(1, pause_timeout_s=PAUSE_TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 - the test reads it
        report["error"] = f"{type(e).__name__}: {e}"
    report["sync_s"] = round(time.perf_counter() - t0, 2)
    report["gate_version"] = backend.gate.version
    report["gate_closed"] = gate_closed(backend.gate)
    if rank == 1:
        finished()
    report["pushed"] = push.pushed
    (out / f"rank{rank}.json").write_text(json.dumps(report))
    if "error" in report:
        os._exit(0)  # the other rank learns of it from its broken collective
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
