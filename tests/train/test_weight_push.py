"""The folder weight push on one process (``paravt.rollout.weight_push``), against a stand-in
server over real HTTP that records the order of reloads and sampling requests: shards in the
serving dtype, written on several threads, that load back as the policy's state dict; the
overlapped push returns before the reload, and no request is sent before the server holds the
weights; a failed overlapped push is the same one-line ``WeightPushError`` for the requests and
for ``settle``. On 2 ranks: test_weight_push_ranks.py."""

from __future__ import annotations

import json
import logging

import pytest
import torch
from reload_standin import ReloadStandIn
from safetensors.torch import load_file

from paravt.models.tiny import build_tiny
from paravt.rollout.vllm_server_client import VLLMServerClient
from paravt.rollout.weight_gather import gathered_buckets
from paravt.rollout.weight_push import INDEX_NAME, AwaitingClient, FolderReloadPush, WeightPushError

BOUND = 96 * 1024


@pytest.fixture(scope="module")
def model():
    m, _ = build_tiny("qwen3-vl", seed=7)
    return m


@pytest.fixture
def server():
    started: list[ReloadStandIn] = []

    def start(reload_s: float = 0.0, fail: bool = False) -> ReloadStandIn:
        started.append(ReloadStandIn(reload_s, fail).start())
        return started[-1]

    yield start
    for s in started:
        s.stop()


def _push(model, tmp_path, url, dtype, **kwargs) -> FolderReloadPush:
    """As ``server_generation`` builds it: views of the live weights handed to the writers
    (``own=False``; nothing changes them before ``settle``)."""
    client = VLLMServerClient(url, retries=0)
    return FolderReloadPush(
        tmp_path / "push", reload=client.reload_weights, server=url,
        buckets=lambda: gathered_buckets(
            model, dtype=dtype, bucket_bytes=BOUND, keep=True, own=False
        ),
        **kwargs,
    )  # fmt: skip


def _read(folder) -> dict:
    index = json.loads((folder / INDEX_NAME).read_text())
    out = {}
    for shard in sorted(set(index["weight_map"].values())):
        out.update(load_file(str(folder / shard)))
    assert set(out) == set(index["weight_map"])
    return out


@pytest.mark.parametrize("serving", [torch.bfloat16, torch.float16, torch.float32])
def test_the_folder_push_writes_shards_in_the_serving_dtype(model, tmp_path, server, serving):
    """An fp32 policy served in bf16 or fp16 is written in it (half the bytes); served in fp32
    it stays fp32. Several shards, cast and written on 3 threads, load back as the state dict;
    the writers' cast buffers are kept for the next push, at most one a thread."""
    httpd = server()
    push = _push(model, tmp_path, httpd.url, serving, threads=3)
    push.push(0)
    folder = tmp_path / "push" / "step-0"
    assert httpd.events == [("reload-start", str(folder)), ("reload-done", str(folder))]
    got = _read(folder)
    want = model.state_dict()
    assert set(got) == set(want)
    for name, t in got.items():
        assert t.dtype == serving and torch.equal(t, want[name].to(serving)), name
    stats = push.last
    assert stats is not None and stats.shards == len(list(folder.glob("*.safetensors"))) > 3
    assert stats.bytes == sum(t.numel() for t in want.values()) * serving.itemsize
    kept = push.scratch.bytes
    push.push(1)
    assert sorted(p.name for p in (tmp_path / "push").iterdir()) == ["step-1"]
    assert push.pushed == [0, 1] and _read(tmp_path / "push" / "step-1").keys() == got.keys()
    if serving == torch.float32:  # nothing to cast: nothing kept
        assert kept == 0 and push.scratch.bytes == 0
    else:
        spans = [b.span() for b in gathered_buckets(
            model, dtype=serving, bucket_bytes=BOUND, keep=True, own=False
        )]  # fmt: skip
        assert 0 < kept <= 3 * max(spans) and 0 < push.scratch.bytes <= 3 * max(spans)


def test_the_overlapped_push_returns_first_and_requests_wait_for_the_reload(
    model, tmp_path, server
):
    """The push returns once the weights are gathered; the reload takes 1 s on the server, and a
    request made at once is sent only after it; ``settle`` then runs the check of that step."""
    httpd = server(reload_s=1.0)
    checked: list[int] = []
    push = _push(model, tmp_path, httpd.url, torch.bfloat16, overlap=True, check=checked.append)
    sampler = AwaitingClient(VLLMServerClient(httpd.url, retries=0), push)
    push.push(0)
    assert "reload-done" not in httpd.kinds() and push.pushed == []
    reply = sampler.generate([1, 2, 3], [], {"max_tokens": 1}, what="a request")
    assert reply.token_ids == [7]
    assert httpd.kinds() == ["reload-start", "reload-done", "generate"]
    push.settle()
    assert push.pushed == [0] and checked == [0]
    assert push.last is not None and push.last.total_s >= push.last.blocked_s
    push.settle()  # nothing under way: nothing to do
    assert checked == [0]


def test_a_failed_overlapped_push_stops_requests_and_settle_with_one_line(model, tmp_path, server):
    httpd = server(reload_s=0.2, fail=True)
    push = _push(model, tmp_path, httpd.url, torch.bfloat16, overlap=True)
    sampler = AwaitingClient(VLLMServerClient(httpd.url, retries=0), push)
    push.push(3)
    with pytest.raises(WeightPushError) as asked:
        sampler.generate([1, 2, 3], [], {"max_tokens": 1})
    with pytest.raises(WeightPushError) as settled:
        push.settle()
    msg = str(asked.value)
    assert msg == str(settled.value) and "\n" not in msg
    assert f"weight push of step 3 to the vLLM server {httpd.url} failed on rank 0" in msg
    assert "HTTP 500" in msg
    assert "generate" not in httpd.kinds() and push.pushed == []
    with pytest.raises(WeightPushError, match="step 3"):  # the run is stopping: no request goes
        sampler.generate([1], [], {"max_tokens": 1})


def test_a_push_before_the_last_one_settled_waits_for_it(model, tmp_path, server, caplog):
    httpd = server(reload_s=0.3)
    checked: list[int] = []
    push = _push(model, tmp_path, httpd.url, torch.bfloat16, overlap=True, check=checked.append)
    push.push(0)
    with caplog.at_level(logging.WARNING, logger="paravt.rollout.weight_push"):
        push.push(1)
    assert "the previous push was not settled" in caplog.text
    assert push.pushed == [0] and checked == []  # its check would see moved weights: skipped
    push.settle()
    assert push.pushed == [0, 1] and checked == [1]
    assert [e for e in httpd.kinds() if e == "reload-done"] == ["reload-done"] * 2


def test_a_push_needs_buckets_or_a_state_dict():
    with pytest.raises(ValueError, match="needs buckets, or state_dict and save"):
        FolderReloadPush("/tmp/x", reload=print)


def test_the_numbers_train_md_quotes_are_the_benchmark_s():
    """docs/TRAIN.md's seconds per GB of the folder push are those of the committed
    benchmarks/results/bench_weight_push.json."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    bench = json.loads((repo / "benchmarks/results/bench_weight_push.json").read_text())
    r, gb = bench["results"], bench["setup"]["model_gb_fp32"]
    text = " ".join((repo / "docs/TRAIN.md").read_text().split())
    quoted = [
        f"{r['baseline']['s_per_gb']} s per GB before",
        f"{r['bucketed']['s_per_gb']} s per GB after ({r['bucketed']['speedup_vs_baseline']}×",
        f"{r['overlapped']['s_per_gb']} s per GB overlapped",
        f"the learner was held {round(r['overlapped']['blocked_s'] / gb, 2)} s per GB",
        f"{r['baseline_fp32_server']['s_per_gb']} → {r['bucketed_fp32_server']['s_per_gb']} s",
        f"took {r['bucketed']['scratch_mb']:g} MB",
        f"--repeats {len(r['baseline']['all_seconds'])}",
    ]
    assert [q for q in quoted if q not in text] == []
