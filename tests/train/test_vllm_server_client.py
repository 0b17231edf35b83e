"""Server mode's bad input, against real HTTP servers in this process (no vLLM needed): a server
that stops answering mid-run (past the outage budget), a weight push that fails on one rank, a
server that serves another model or another vLLM release. Outages within the budget and several
servers: tests/train/test_vllm_servers.py. The same code against a real vLLM server:
tests/train/test_vllm_server_mode.py and tests/train/test_vllm_kill.py."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from test_vllm_backend import FORCED, _engine_config, _episodes

from paravt.errors import ConfigError
from paravt.rollout.vllm_server import ServerGeneration, check_server
from paravt.rollout.vllm_server_client import VLLMServerClient, VLLMServerError
from paravt.rollout.vllm_servers import ServerPool, VLLMOutageError
from paravt.rollout.weight_push import FolderReloadPush, Pushed, WeightPushError


class Answers(BaseHTTPRequestHandler):
    """A stand-in for vLLM's endpoints: fixed replies, and after ``budget`` generate requests it
    stops answering (the listening socket is closed: connection refused from then on)."""

    def log_message(self, *args):  # keep pytest's output clean
        pass

    def _send(self, code: int, body) -> None:
        raw = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):  # noqa: N802 - http.server's name
        s = self.server
        if self.path == "/health":
            return self._send(200, {})
        if self.path == "/version":
            return self._send(200, {"version": s.version})
        if self.path == "/v1/models":
            return self._send(200, {"data": [{"id": s.model, "root": s.model}]})
        if self.path.startswith("/server_info"):
            return self._send(200, {"vllm_config": {"model_config": {"model": s.model}}})
        return self._send(404, {"error": "not found"})

    def do_POST(self):  # noqa: N802
        s = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        s.bodies.append((self.path, body))
        if self.path == "/inference/v1/generate":
            s.generated += 1
            if s.generated > s.budget:  # the server goes away mid-run
                threading.Thread(target=s.shutdown, daemon=True).start()
                s.socket.close()
                return None
            tok = s.eos
            reply = {"prompt_token_ids": None, "choices": [{
                "token_ids": [tok], "finish_reason": "stop",
                "logprobs": {"content": [{"token_id": tok, "logprob": -0.25}]},
            }]}  # fmt: skip
            if s.cached is not None:  # as vLLM with --enable-prompt-tokens-details
                reply["usage"] = {"prompt_tokens_details": {"cached_tokens": s.cached}}
            return self._send(200, reply)
        if self.path == "/collective_rpc":
            return self._send(500, {"error": "reload failed: no such folder"})
        if self.path == "/busy":
            return self._send(503, {"error": "busy"})
        if self.path == "/bad":
            return self._send(400, {"error": "bad request"})
        return self._send(200, {})


@pytest.fixture(scope="module")
def processor(tiny_qwen3_dir):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(tiny_qwen3_dir)


@pytest.fixture
def answering():
    """``answering(budget=..., model=..., version=...)`` → a running stand-in server."""
    servers = []

    def start(budget=10**6, model="the-model", version="0.32.0", eos=0, cached=None):
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
        httpd.budget, httpd.generated, httpd.bodies, httpd.cached = budget, 0, [], cached
        httpd.model, httpd.version, httpd.eos = model, version, eos
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        httpd.url = f"http://127.0.0.1:{httpd.server_address[1]}"
        return httpd

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


class NoPush:
    def push(self, step: int) -> Pushed:
        return Pushed()


@pytest.mark.parametrize("schedule", ["rounds", "episodes"])
def test_a_server_that_stops_mid_run_fails_past_the_outage_budget_naming_it(
    answering, processor, video_path, schedule
):
    """The engine runs two episodes through the server; it answers the first generate call of
    the batch and then goes away for good. The requests wait for it within the outage budget,
    then the run stops with ``VLLMOutageError``, one line naming the server, how long it was
    away and why — the engine returns no records, so no episode is scored as a failure in
    silence. The same whether the episodes go in rounds or on their own."""
    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend

    eos = processor.tokenizer.convert_tokens_to_ids("<|im_end|>")
    httpd = answering(budget=1, eos=eos)
    client = VLLMServerClient(httpd.url, retries=3, backoff_s=0.01, max_concurrency=1)
    pool = ServerPool([client], outage_budget_s=1.5, poll_s=0.1)
    backend = VLLMBackend(ServerGeneration(pool, NoPush()), processor, first_turn_text=FORCED)
    assert not backend.lockstep and backend.collapse_pads
    engine = EpisodeEngine(backend, _engine_config(max_new_tokens=8, schedule=schedule))
    assert engine.episodes_advance_alone() == (schedule == "episodes")
    with pytest.raises(VLLMOutageError) as caught, backend.rollout(0):
        engine.run(_episodes(video_path("torchcodec__testsrc2.mp4"), 2))
    msg = str(caught.value)
    assert "\n" not in msg and "past the outage budget of 1.5 s" in msg
    assert f"{httpd.url} away for " in msg and "trainer.vllm_outage_budget_s" in msg
    assert pool.resubmitted >= 1 and pool.live() == []
    pool.close()
    (path, body), *_ = httpd.bodies
    # token ids in, one pad per frame, frames as content parts with a content hash
    assert path == "/inference/v1/generate" and body["return_token_ids"] is True
    assert (
        body["sampling_params"]["logprobs"] == 0
        and eos in body["sampling_params"]["stop_token_ids"]
    )
    assert all(
        p["url"].startswith("data:image/png;base64,") and p["uuid"] for p in body["content_parts"]
    )


def test_a_busy_server_is_retried_and_a_bad_request_is_named(answering):
    """HTTP 503 is retried with doubling waits, then the server counts as away
    (``ServerUnreachable``); HTTP 400 stops at once with ``VLLMServerError`` naming the server,
    the endpoint and the request."""
    from paravt.rollout.vllm_server_client import ServerUnreachable

    httpd = answering()
    client = VLLMServerClient(httpd.url, retries=2, backoff_s=0.01)
    with pytest.raises(ServerUnreachable, match=r"HTTP 503.* after 3 attempt"):
        client.call("POST", "/busy", {}, what="a busy request")
    assert client.retried == 2
    with pytest.raises(VLLMServerError, match=rf"{httpd.url}: POST /bad for a bad one was refused"):
        client.call("POST", "/bad", {}, what="a bad one")


@pytest.mark.parametrize("schedule", ["rounds", "episodes"])
@pytest.mark.parametrize("cached", [None, 48])
def test_the_servers_prefix_cache_count_is_the_turns_cached_tokens(
    answering, processor, video_path, cached, schedule
):
    """The reply's ``usage.prompt_tokens_details.cached_tokens`` is the sampled turn's
    ``cached_tokens`` in the record, in rounds and with episodes on their own; a server started
    without the flag reports none (0)."""
    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend

    eos = processor.tokenizer.convert_tokens_to_ids("<|im_end|>")
    httpd = answering(eos=eos, cached=cached)
    generator = ServerGeneration(VLLMServerClient(httpd.url), NoPush())
    backend = VLLMBackend(generator, processor, first_turn_text=FORCED)
    engine = EpisodeEngine(backend, _engine_config(max_new_tokens=8, schedule=schedule))
    with backend.rollout(0):
        (record,) = engine.run(_episodes(video_path("torchcodec__testsrc2.mp4"), 1))
    assert record.status == "ok", record.error
    if schedule == "rounds":  # a request on its own sets nothing on the shared generator
        assert generator.last_cached_tokens == [cached]
    # the forced first turn was sampled by no one; the second is the server's
    assert [t.cached_tokens for t in record.turns] == [0, cached or 0]


def test_server_mode_episodes_advance_on_their_own_and_send_what_the_rounds_send(
    answering, processor, video_path
):
    """In server mode each request goes on its own (``VLLMBackend.agenerate``), so the engine's
    ``auto`` schedule lets every episode advance alone; the server is sent the same requests
    (token ids, frames, sampling) as in synchronous rounds, and the records are the same. Under a
    lockstep (a collective generator on several ranks) there is no ``agenerate``: rounds."""
    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend

    eos = processor.tokenizer.convert_tokens_to_ids("<|im_end|>")
    episodes = _episodes(video_path("torchcodec__testsrc2.mp4"), 3)
    sent, records = {}, {}
    for schedule in ("rounds", "auto"):
        httpd = answering(eos=eos)
        generator = ServerGeneration(VLLMServerClient(httpd.url), NoPush())
        backend = VLLMBackend(generator, processor, first_turn_text=FORCED)
        engine = EpisodeEngine(backend, _engine_config(max_new_tokens=8, schedule=schedule))
        with backend.rollout(0):
            records[schedule] = engine.run(episodes)
        backend.close()
        assert engine.episodes_advance_alone() == (schedule == "auto")
        # per episode: the forced first turn (answered without the server) and one sampled turn
        assert backend.alone_requests == (2 * 3 if schedule == "auto" else 0)
        sent[schedule] = sorted(  # each request's id is its own (a fresh uuid)
            json.dumps({**body, "request_id": None}, sort_keys=True) for _, body in httpd.bodies
        )
    assert len(sent["auto"]) == 3
    assert sent["auto"] == sent["rounds"]
    for a, b in zip(records["rounds"], records["auto"], strict=True):
        assert a.status == b.status == "ok", (a.error, b.error)
        assert [t.text for t in a.turns] == [t.text for t in b.turns]
        assert a.prediction == b.prediction and len(a.calls) == len(b.calls) == 2

    class Collective(ServerGeneration):
        collective = True

    several = VLLMBackend(
        Collective(VLLMServerClient("http://127.0.0.1:9"), NoPush()), processor,
        world_size=2, gather=lambda shares: [shares],
    )  # fmt: skip
    assert several.lockstep and several.agenerate is None


def test_a_failed_push_stops_every_rank_with_one_line(answering, tmp_path):
    """Rank 0 writes the weights and the server refuses to reload them (HTTP 500, retried, then
    a failed push: the server answered, so it is no outage); rank 1, which only waited, raises
    the same one-line error."""
    httpd = answering()
    pool = ServerPool([VLLMServerClient(httpd.url, retries=1, backoff_s=0.01)])
    written = []

    def save(folder, sd):
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(b"x")
        written.append(folder)

    outcomes = {}

    def gather_for(rank):
        def gather(share):  # the all-gather: rank 0's outcome is what rank 0's push found
            outcomes.setdefault(rank, share[0])
            return [outcomes.get(0), outcomes.get(1)]

        return gather

    def rank(r):
        return FolderReloadPush(
            tmp_path / "w", state_dict=dict, save=save, reload=pool.reload_weights,
            is_main=r == 0, gather=gather_for(r), server=pool.base_url,
        )  # fmt: skip

    main, other = rank(0), rank(1)
    with pytest.raises(WeightPushError) as e0:
        main.push(3)
    with pytest.raises(WeightPushError) as e1:
        other.push(3)
    msg = str(e0.value)
    assert msg == str(e1.value) and "\n" not in msg
    assert f"step 3 to the vLLM server {httpd.url} failed on rank 0" in msg and "HTTP 500" in msg
    assert written and main.pushed == [] and other.pushed == []
    reloads = [b for p, b in httpd.bodies if p == "/collective_rpc"]
    assert len(reloads) == 2 and reloads[0]["kwargs"]["weights_path"].endswith("step-3")


def test_a_server_of_another_model_or_release_is_refused_at_start(answering, tmp_path):
    good = answering(model="the-model")
    assert check_server(VLLMServerClient(good.url), "the-model", wait_s=5)["model"] == "the-model"
    with pytest.raises(ConfigError, match=r"serves other-model, not this run's model 'the-model'"):
        check_server(VLLMServerClient(answering(model="other-model").url), "the-model", wait_s=5)
    with pytest.raises(ConfigError, match=r"runs vLLM 0\.31\.0.*0\.32, 0\.33, 0\.34"):
        check_server(VLLMServerClient(answering(version="0.31.0").url), "the-model", wait_s=5)
    with pytest.raises(VLLMServerError, match=r"/health did not answer within 1 s"):
        check_server(VLLMServerClient("http://127.0.0.1:9"), "the-model", wait_s=1)
