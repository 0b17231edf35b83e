"""The weight push on 2 gloo ranks (torchrun, CPU; ``weight_push_worker.py``): the bucketed
gather of FSDP2 shards and of DeepSpeed ZeRO-3 partitions gives rank 0 every tensor whole, in
the serving dtype, bucket by bucket within the bound, equal to the unsharded state dict, and
rank 1 nothing; the overlapped folder push sends no request from either rank before the server
holds the weights, and a failed one is the same one-line error on both ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from gloo_ranks import run_two_ranks
from reload_standin import ReloadStandIn

WORKER = Path(__file__).with_name("weight_push_worker.py")
BOUND = 96 * 1024  # the worker's


def _gathered(tmp_path: Path, mode: str) -> None:
    done = run_two_ranks(WORKER, mode, str(tmp_path), timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["buckets"] == ranks[1]["buckets"] and ranks[1]["kept"] == 0
    want = torch.load(tmp_path / "want.pt")
    got = torch.load(tmp_path / "got.pt")
    assert list(got) == list(want) and ranks[0]["kept"] == len(want)
    for name, t in got.items():
        assert t.dtype == torch.bfloat16 and torch.equal(t, want[name].to(torch.bfloat16)), name
    assert len(ranks[0]["buckets"]) > 3
    for names in ranks[0]["buckets"]:  # fp32 learner: 4 bytes an element against the bound
        counted = sum(want[n].numel() * 4 for n in names)
        assert counted <= BOUND or len(names) == 1


@pytest.mark.ranks
def test_fsdp2_shards_are_gathered_whole_on_rank_0_only(tmp_path):
    _gathered(tmp_path, "fsdp2")


@pytest.mark.ranks
def test_zero3_partitions_are_gathered_whole_on_rank_0_only(tmp_path):
    pytest.importorskip("deepspeed")
    _gathered(tmp_path, "zero3")


@pytest.mark.ranks
def test_the_nccl_push_sends_from_rank_0_alone_while_every_rank_gathers(tmp_path):
    """``NCCLPush`` over FSDP2 shards, rank 0's NCCL transfer replaced by a recorder that takes
    the stream on a thread of its own as TRL's does (no NCCL on this machine; the real transfer
    is test_weight_push_nccl_gpu.py, not run): rank 0 pauses the server, sends every tensor whole
    in bf16 and resumes it; rank 1 opens no transfer and only takes part in the gathers."""
    done = run_two_ranks(WORKER, "nccl", str(tmp_path), timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0]["opened"] and not ranks[1]["opened"]
    assert ranks[0]["calls"] == ["pause", "send_weights", "resume"]
    assert [r["after"] for r in ranks] == [1, 0] and all(r["pushed"] == [0] for r in ranks)
    want, got = torch.load(tmp_path / "want.pt"), torch.load(tmp_path / "got.pt")
    assert list(got) == list(want)
    for name, t in got.items():
        assert t.dtype == torch.bfloat16 and torch.equal(t, want[name].to(torch.bfloat16)), name


@pytest.mark.ranks
@pytest.mark.parametrize("fail", [False, True], ids=["loaded", "failed"])
def test_no_rank_samples_before_the_server_holds_the_overlapped_push(tmp_path, fail):
    """Rank 0 alone writes and reloads (the server sees one reload, 1 s long); both ranks make a
    request as soon as ``push`` returns, and the server sees both after the reload, or none when
    it failed, where both ranks raise the same one line, from the request and from ``settle``."""
    httpd = ReloadStandIn(reload_s=1.0, fail=fail).start()
    try:
        done = run_two_ranks(WORKER, "overlap", str(tmp_path), httpd.url, timeout=300)
    finally:
        httpd.stop()
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    assert all(r["returned_before_loaded"] for r in ranks)
    kinds = httpd.kinds()
    assert kinds[:2] == ["reload-start", "reload-done"]
    if not fail:
        assert kinds[2:] == ["generate", "generate"]
        assert all(r["sampled"] == [7] and r["pushed"] == [0] for r in ranks)
        assert all(r["pool_folder"].endswith("push/step-0") for r in ranks)  # landed everywhere
        return
    assert kinds[2:] == []
    errors = {r["request_error"] for r in ranks} | {r["settle_error"] for r in ranks}
    assert len(errors) == 1
    (msg,) = errors
    assert "weight push of step 0" in msg and "failed on rank 0" in msg and "HTTP 500" in msg
