"""Several vLLM servers and their outages, against real HTTP servers in this process (no vLLM
needed; the same pool against real vLLM servers, killed and restarted:
tests/train/test_vllm_kill.py): sticky routing by episode, a server killed for good, a server
back within the outage budget (it rejoins after a reload, the requests that waited are answered),
an episode past its deadline, a stop request during an outage, and the config's refusals."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import ThreadingHTTPServer

import pytest
from standin_vllm import JSONHandler

from paravt.errors import ConfigError
from paravt.rollout.vllm_server_client import VLLMServerClient, VLLMServerError
from paravt.rollout.vllm_servers import (
    RolloutStopped,
    ServerPool,
    VLLMOutageError,
    episode_route,
)


class Handler(JSONHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self._send({})  # /health

    def do_POST(self):  # noqa: N802
        s = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        with s.lock:
            s.log.append((self.path, body))
        if self.path == "/inference/v1/generate":
            time.sleep(s.delay)
            tok = s.token
            return self._send({"prompt_token_ids": None, "choices": [{
                "token_ids": [tok], "finish_reason": "stop",
                "logprobs": {"content": [{"token_id": tok, "logprob": -0.5}]},
            }]})  # fmt: skip
        return self._send({})


class Stub:
    """One stand-in vLLM server on a fixed loopback port; ``kill`` closes it (connections
    refused), ``start`` opens it again on the same port (a restart)."""

    def __init__(self, token: int, delay: float = 0.0):
        self.token, self.delay, self.log = token, delay, []
        self.lock = threading.Lock()
        self.port = 0
        self.httpd = None
        self.start()

    def start(self) -> None:
        httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        httpd.daemon_threads = True
        httpd.token, httpd.delay, httpd.log, httpd.lock = (
            self.token,
            self.delay,
            self.log,
            self.lock,
        )
        self.port = httpd.server_address[1]
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        self.httpd = httpd

    def kill(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def generated(self) -> list[dict]:
        with self.lock:
            return [b for p, b in self.log if p == "/inference/v1/generate"]


@pytest.fixture
def stubs():
    made = []

    def make(n, **kw):
        for i in range(n):
            made.append(Stub(token=i + 1, **kw))
        return made[-n:]

    yield make
    for s in made:
        with contextlib.suppress(Exception):  # already killed by the test
            s.kill()


def _ask(pool: ServerPool, key: str, turn: int) -> int:
    with episode_route(key):
        reply = pool.generate([1, 2, 3, turn], [], {"max_tokens": 1}, what=f"{key} t{turn}")
    return reply.token_ids[0]


def _pool(stubs_, **kw) -> ServerPool:
    return ServerPool([VLLMServerClient(s.url, retries=0) for s in stubs_], poll_s=0.1, **kw)


def test_every_turn_of_an_episode_goes_to_one_server_and_episodes_spread(stubs):
    a, b = stubs(2, delay=0.05)
    pool = _pool([a, b])
    keys = [f"ep{i}" for i in range(6)]
    with ThreadPoolExecutor(6) as lanes:  # every episode's first turn at once, then the next
        for turn in range(3):
            served = dict(
                zip(keys, lanes.map(lambda k, t=turn: _ask(pool, k, t), keys), strict=True)
            )
            if turn == 0:
                first = served
            assert served == first  # sticky: the same server every turn
    assert set(first.values()) == {1, 2}  # least-loaded: both servers took episodes
    assert len(a.generated()) + len(b.generated()) == 18
    pool.close()


def test_one_of_two_servers_killed_for_good_the_run_goes_on_with_the_other(stubs, caplog):
    """Server A dies while requests are in flight there: they are resubmitted to B, every
    request is answered once, later requests of A's episodes go to B; one log line names A,
    what happened and where its requests went."""
    a, b = stubs(2, delay=0.2)
    pool = _pool([a, b])
    keys = [f"ep{i}" for i in range(8)]
    caplog.set_level(logging.WARNING, logger="paravt.rollout.vllm_servers")
    with ThreadPoolExecutor(8) as lanes:
        futures = [lanes.submit(_ask, pool, k, 0) for k in keys]
        time.sleep(0.1)  # A holds some of them now
        a.kill()
        answered = [f.result() for f in futures]
        later = list(lanes.map(lambda k: _ask(pool, k, 1), keys))
    assert len(answered) == 8 and set(later) == {2} and pool.live() == [b.url]
    assert pool.resubmitted >= 1
    down = [r.getMessage() for r in caplog.records if "is down" in r.getMessage()]
    assert len(down) == 1 and a.url in down[0] and f"go to {b.url}" in down[0]
    pool.close()


def test_a_server_back_within_the_budget_rejoins_after_a_reload(stubs, caplog):
    """The only server dies, requests wait (within the outage budget), it comes back on the same
    port: it rejoins only after ``rejoin`` had it reload the step's folder, then the requests that
    waited are sent to it and answered; the log says the outage began and that it is back."""
    (a,) = stubs(1)
    pool = _pool([a], outage_budget_s=30)
    pool.begin_step("/weights/step-3")
    pool.rejoin = lambda client: (client.reload_weights(pool.folder), "reloaded step-3")[1]
    caplog.set_level(logging.WARNING, logger="paravt.rollout.vllm_servers")
    assert _ask(pool, "ep0", 0) == 1
    a.kill()
    with ThreadPoolExecutor(3) as lanes:
        futures = [lanes.submit(_ask, pool, f"ep{i}", 1) for i in range(3)]
        time.sleep(1.0)
        assert not any(f.done() for f in futures)  # waiting, not failed
        a.log.clear()
        a.start()  # the restart
        assert [f.result(timeout=30) for f in futures] == [1, 1, 1]
    paths = [p for p, _ in a.log]
    reload_at = paths.index("/collective_rpc")
    assert "/inference/v1/generate" not in paths[:reload_at]  # weights first, then requests
    assert a.log[reload_at][1]["kwargs"]["weights_path"] == "/weights/step-3"
    lines = [r.getMessage() for r in caplog.records]
    assert any("no vLLM server answers" in m and "waits for one" in m for m in lines)
    back = [m for m in lines if "is back after" in m]
    assert len(back) == 1 and "reloaded step-3" in back[0] and a.url in back[0]
    assert len(pool.outages) == 1 and pool.outages[0][0] == a.url
    pool.close()


def test_a_server_that_never_answers_fails_within_the_budget_naming_it(stubs):
    pool = ServerPool([VLLMServerClient("http://127.0.0.1:9")], outage_budget_s=0.5, poll_s=0.1)
    t0 = time.monotonic()
    with pytest.raises(
        VLLMOutageError,
        match=r"budget of 0\.5 s .*: http://127\.0\.0\.1:9 away for .*Connection refused",
    ):
        _ask(pool, "ep0", 0)
    assert time.monotonic() - t0 < 10
    pool.close()


def test_a_stop_request_ends_an_outage_wait(stubs):
    """SIGTERM while the requests wait for a server: they end at once (``RolloutStopped``)."""
    asked = []
    pool = ServerPool(
        [VLLMServerClient("http://127.0.0.1:9")], outage_budget_s=60, poll_s=0.1,
        stop=lambda: asked[0] if asked else None,
    )  # fmt: skip
    threading.Timer(0.5, lambda: asked.append("SIGTERM")).start()
    with pytest.raises(RolloutStopped, match="SIGTERM received during the rollout"):
        _ask(pool, "ep0", 0)
    pool.close()


def test_an_episode_past_its_deadline_stops_with_one_line(stubs):
    (a,) = stubs(1, delay=0.3)
    pool = _pool([a], deadline_s=0.2)
    _ask(pool, "ep0", 0)  # 0.3 s of server time
    with pytest.raises(VLLMServerError, match=r"ep0 t1 passed its episode's deadline") as e:
        _ask(pool, "ep0", 1)
    assert "\n" not in str(e.value) and "trainer.vllm_episode_deadline_s" in str(e.value)
    assert _ask(pool, "ep1", 0) == 1  # another episode has its own
    pool.close()


def _server_mode(tmp_path, **trainer):
    from paravt.train.config import ParaGRPOConfig

    return ParaGRPOConfig(
        output_dir=str(tmp_path),
        use_vllm=True,
        vllm_mode="server",
        report_to=[],
        bf16=False,
        use_cpu=True,
        **trainer,
    )


def test_the_config_takes_one_url_or_a_list_and_refuses_waits_past_ddp_timeout(tmp_path):
    one = _server_mode(tmp_path, vllm_server_base_url="http://h:8000")
    assert one.vllm_server_base_url == ["http://h:8000"]
    two = _server_mode(tmp_path, vllm_server_base_url=["http://h:8000", "http://h:8001"])
    assert two.vllm_server_base_url == ["http://h:8000", "http://h:8001"]
    assert _server_mode(tmp_path).vllm_server_base_url is None  # host and port
    with pytest.raises(ConfigError, match=r"retries=4 x vllm_server_request_timeout_s=600 .*3015"):
        _server_mode(tmp_path, vllm_server_retries=4, vllm_server_request_timeout_s=600)
    with pytest.raises(ConfigError, match=r"deadline_s=1500 \+ vllm_outage_budget_s=600"):
        _server_mode(tmp_path, vllm_episode_deadline_s=1500)
    assert _server_mode(tmp_path, vllm_episode_deadline_s=1500, ddp_timeout=3600)
    with pytest.raises(ConfigError, match="several servers need trainer.vllm_weight_push=folder"):
        _server_mode(
            tmp_path, vllm_server_base_url=["http://a:1", "http://b:2"], vllm_weight_push="nccl"
        )
