"""The folder weight push on one process (``paravt.rollout.weight_push``), against a stand-in
server over real HTTP that records the order of reloads and sampling requests: shards in the
serving dtype, written on several threads, that load back as the policy's state dict; the
overlapped push returns before the reload, and no request of the real ``ServerGeneration`` is
sent before the server holds the weights (then its server pool learns which servers do); a
failed overlapped push is the same one-line ``WeightPushError`` for the requests and for
``settle``. On 2 ranks: test_weight_push_ranks.py."""

from __future__ import annotations

import json
import logging

import pytest
import torch
from reload_standin import ReloadStandIn
from safetensors.torch import load_file

from paravt.models.tiny import build_tiny
from paravt.rollout.vllm_server import ServerGeneration
from paravt.rollout.vllm_server_client import VLLMServerClient
from paravt.rollout.vllm_servers import ServerPool
from paravt.rollout.weight_gather import gathered_buckets
from paravt.rollout.weight_push import INDEX_NAME, FolderReloadPush, WeightPushError

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


def _push(model, tmp_path, url, dtype, reload=None, **kwargs) -> FolderReloadPush:
    """As ``server_generation`` builds it: views of the live weights handed to the writers
    (``own=False``; nothing changes them before ``settle``)."""
    reload = reload or VLLMServerClient(url, retries=0).reload_weights
    return FolderReloadPush(
        tmp_path / "push", reload=reload, server=url,
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


def _generation(model, tmp_path, httpd, **kwargs) -> tuple[ServerGeneration, FolderReloadPush]:
    """The server-mode generator over a pool of the stand-in, with an overlapped push whose
    reload is the pool's (as ``server_generation`` builds them)."""
    pool = ServerPool([VLLMServerClient(httpd.url, retries=0)])
    push = _push(
        model, tmp_path, httpd.url, torch.bfloat16, reload=pool.reload_weights, overlap=True,
        **kwargs,
    )  # fmt: skip
    return ServerGeneration(pool, push), push


def _ask(gen: ServerGeneration):
    return gen.generate_one([1, 2, 3], None, max_tokens=1, temperature=1.0, top_p=1.0)


def test_the_overlapped_push_returns_first_and_requests_wait_for_the_reload(
    model, tmp_path, server
):
    """The push returns once the weights are gathered (the policy's side of the weights check
    taken by then); the reload takes 1 s on the server, and a request made at once is sent only
    after it; the pool then knows the step's folder and holders, and ``settle`` runs the check
    of that step."""
    httpd = server(reload_s=1.0)
    checked: list[int] = []
    referenced: list[list[str]] = []  # what the server had done when the reference was taken
    gen, push = _generation(
        model, tmp_path, httpd, check=checked.append,
        reference=lambda: referenced.append(httpd.kinds()),
    )  # fmt: skip
    try:
        gen.sync_weights()
        assert "reload-done" not in httpd.kinds() and push.pushed == []
        # the policy's side of the check, taken before push returned and before any reload
        assert referenced == [[]]
        assert push.pushing  # until it has landed: a server that comes back waits to rejoin
        assert _ask(gen).token_ids == [7]
        assert not push.pushing
        assert httpd.kinds() == ["reload-start", "reload-done", "generate"]
        assert gen.client.folder == str(tmp_path / "push" / "step-0")
        assert gen.client.live() == [httpd.url]
        gen.settle()
        assert push.pushed == [0] and checked == [0]
        assert push.last is not None and push.last.total_s >= push.last.blocked_s
        gen.settle()  # nothing under way: nothing to do
        assert checked == [0]
    finally:
        gen.client.close()


def test_the_reference_of_a_push_that_does_not_overlap_is_taken_before_the_reload(
    model, tmp_path, server
):
    httpd = server()
    referenced: list[list[str]] = []
    push = _push(model, tmp_path, httpd.url, torch.bfloat16,
                 reference=lambda: referenced.append(httpd.kinds()))  # fmt: skip
    pushed = push.push(0)
    assert referenced == [[]] and httpd.kinds() == ["reload-start", "reload-done"]
    assert pushed.wait is None and push.pushed == [0] and not push.pushing


def test_a_server_that_does_not_answer_the_weights_probe_is_down_not_a_failed_check(caplog):
    """The check after a push: a server of the pool that does not answer the probe (it went
    away) is marked down in the pool, with the cause, instead of failing the run; it rejoins
    once it answers again and holds the step's weights. While a push is under way a server
    that answers again waits to rejoin (``busy``)."""
    from paravt.models.tiny import build_tiny as build
    from paravt.rollout.vllm_server import WeightsProbe, push_checker, rejoiner
    from paravt.rollout.vllm_servers import NotReady

    _, processor = build("qwen3-vl", seed=7)
    gone = VLLMServerClient("http://127.0.0.1:9", retries=0)  # nothing listens there
    pool = ServerPool([gone], poll_s=60)
    try:
        probe = WeightsProbe(pool, processor)
        probe.reference = [0.0] * len(probe.ids)  # as ``take_reference`` leaves it
        caplog.set_level(logging.WARNING, logger="paravt.rollout.vllm_servers")
        push_checker(probe, None, referenced=True)(3)  # no WeightPushError
        assert pool.live() == []
        down = [r.getMessage() for r in caplog.records if "is down" in r.getMessage()]
        assert len(down) == 1 and "did not answer the weights probe" in down[0]
        with pytest.raises(NotReady):
            rejoiner(pool, probe, is_main=True, busy=lambda: True)(gone)
    finally:
        pool.close()


def test_a_failed_overlapped_push_stops_requests_and_settle_with_one_line(model, tmp_path, server):
    httpd = server(reload_s=0.2, fail=True)
    gen, push = _generation(model, tmp_path, httpd)
    try:
        gen.step = 2
        gen.sync_weights()
        with pytest.raises(WeightPushError) as asked:
            _ask(gen)
        with pytest.raises(WeightPushError) as settled:
            gen.settle()
        msg = str(asked.value)
        assert msg == str(settled.value) and "\n" not in msg
        assert f"weight push of step 3 to the vLLM server {httpd.url} failed on rank 0" in msg
        assert "HTTP 500" in msg or "500" in msg
        assert "generate" not in httpd.kinds() and push.pushed == []
        with pytest.raises(WeightPushError, match="step 3"):  # the run stops: no request goes
            _ask(gen)
    finally:
        gen.client.close()


def test_a_push_before_the_last_one_settled_waits_for_it(model, tmp_path, server, caplog):
    httpd = server(reload_s=0.3)
    checked: list[int] = []
    push = _push(model, tmp_path, httpd.url, torch.bfloat16, overlap=True, check=checked.append)
    first = push.push(0)
    assert first.wait is not None and first.holders is None
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


def test_the_numbers_the_benchmarks_readme_quotes_are_the_benchmark_s():
    """benchmarks/README.md's seconds per GB of the folder push are those of the committed
    benchmarks/results/bench_weight_push.json."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    bench = json.loads((repo / "benchmarks/results/bench_weight_push.json").read_text())
    r, gb = bench["results"], bench["setup"]["model_gb_fp32"]
    text = " ".join((repo / "benchmarks/README.md").read_text().split())
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


class _KeepPauseTransfer:
    """What TRL's weight transfer does to the server around a send (no NCCL here); the send
    itself fails, as a broken NCCL group would."""

    def __init__(self, url: str, resume_fails: bool = False):
        from push_ranks_worker import post

        self.post, self.url, self.resume_fails = post, url, resume_fails

    def pause(self) -> None:
        self.post(f"{self.url}/pause?mode=keep")

    def send_weights(self, pairs) -> None:
        next(iter(pairs))
        raise RuntimeError("NCCL error: unhandled system error")

    def resume(self) -> None:
        if self.resume_fails:
            raise ConnectionError("server unreachable")
        self.post(f"{self.url}/resume")


@pytest.mark.parametrize("resume_fails", [False, True], ids=["resumed", "left-paused"])
def test_a_failed_nccl_send_resumes_the_server_or_says_it_could_not(model, resume_fails):
    """TRL leaves the server paused when a send fails; paravt resumes it before the run stops
    (one line says so), or the line says it is left paused and how to resume it."""
    from keep_pause_standin import KeepPauseServer

    from paravt.rollout.weight_push import NCCLPush

    server = KeepPauseServer().start()
    try:
        push = NCCLPush(
            server.url, lambda: model, is_main=True, bucket_bytes=BOUND, device="cpu",
            dtype=torch.bfloat16,
        )  # fmt: skip
        push.transfer = _KeepPauseTransfer(server.url, resume_fails)
        with pytest.raises(WeightPushError) as err:
            push.push(3)
        events = list(server.events)
    finally:
        server.stop()
    line = str(err.value)
    assert "\n" not in line and "weight push of step 3" in line and "NCCL error" in line
    if resume_fails:
        assert events == ["pause mode=keep"]
        assert "left PAUSED" in line and f"POST {server.url}/resume" in line
    else:
        assert events == ["pause mode=keep", "resume"]
        assert "the server was resumed" in line
    assert push.pushed == []
