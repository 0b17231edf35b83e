"""A stand-in for a vLLM server in server mode, over real HTTP in this process, whose replies do
not depend on the weights or on timing.

Why: bounded staleness changes *when* each step's episodes are sampled, never *which*. Against a
server whose reply to a prompt is a fixed function of that prompt (and of how many times the
same prompt was asked before: the generations of one group send the same first prompt, and must
differ for the group to have a reward spread), a run at ``max_staleness = 2`` must see exactly
the episodes, tokens and losses of the synchronous run. A real vLLM samples from the pushed
weights, so that comparison needs this stand-in; the real server is tested in
``test_vllm_server_mode.py``.

It answers what paravt's client asks (``paravt.rollout.vllm_server_client``): ``/health``,
``/version``, ``/v1/models``, ``/server_info``, ``/inference/v1/generate`` (token ids in, a short
answer turn out: ``<answer>X</answer>`` with X one of the options, then the stop token, each
token at logprob ``LOGPROB``) and ``/collective_rpc`` (a weight reload, recorded, taking
``reload_s``). Each generate request is held ``delay_s`` (a stand-in for sampling time), so the
rollout overlaps learning; it counts the requests that came while a reload was under way, and
with ``tag_loaded`` its reply says which reload answered it.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOGPROB = -0.5


class JSONHandler(BaseHTTPRequestHandler):
    """A request handler that answers JSON and logs nothing (pytest's output stays clean); the
    stand-ins of this module and of ``test_vllm_servers.py`` answer through it."""

    def log_message(self, *args):
        pass

    def _send(self, body) -> None:
        raw = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)


class _Handler(JSONHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        s: StandInServer = self.server  # type: ignore[assignment]
        if self.path == "/health":
            return self._send({})
        if self.path == "/version":
            return self._send({"version": "0.32.0"})
        if self.path == "/v1/models":
            return self._send({"data": [{"id": s.model, "root": s.model}]})
        if self.path.startswith("/server_info"):
            return self._send({"vllm_config": {"model_config": {"model": s.model}}})
        self.send_error(404)
        return None

    def do_POST(self):  # noqa: N802
        s: StandInServer = self.server  # type: ignore[assignment]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        if self.path == "/collective_rpc":
            with s.lock:
                s.reloads.append(body.get("kwargs", {}).get("weights_path"))
                failing = s.fail_reload_from is not None and len(s.reloads) > s.fail_reload_from
                s.reloading += 1
            time.sleep(s.reload_s)
            with s.lock:
                s.reloading -= 1
                s.loaded += 0 if failing else 1
            if failing:  # a server that cannot read the pushed folder
                raw = b'{"error": "reload failed: no such folder"}'
                self.send_response(500)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
                return None
            return self._send({})
        if self.path == "/inference/v1/generate":
            with s.lock:
                s.clients.append(self.client_address[0])
            return self._send(s.reply(body["token_ids"]))
        return self._send({})


class StandInServer(ThreadingHTTPServer):
    """``StandInServer(model, answers, eos)``: ``answers`` are the token ids of each possible
    answer turn (stop token excluded); ``url`` once started (``start``)."""

    daemon_threads = True

    def __init__(
        self,
        model: str,
        answers: list[list[int]],
        eos: int,
        delay_s: float = 0.02,
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        super().__init__((host, port), _Handler)
        self.model, self.answers, self.eos, self.delay_s = model, answers, eos, delay_s
        self.lock = threading.Lock()
        self.seen: dict[str, int] = {}
        self.reloads: list[str | None] = []
        #: reloads after this many fail (HTTP 500), None: never
        self.fail_reload_from: int | None = None
        self.requests = 0
        #: seconds a reload takes; reloads done, under way; requests that came during one
        self.reload_s, self.loaded, self.reloading, self.during_reload = 0.0, 0, 0, 0
        #: each reply says how many reloads were done when its request came, as its
        #: ``cached_tokens`` (the one per-request number a turn records): which weights answered
        self.tag_loaded = False
        #: the address each generate request came from (which node sent it)
        self.clients: list[str] = []
        self.url = f"http://{host}:{self.server_address[1]}"

    @classmethod
    def for_model(cls, model_dir, host: str = "127.0.0.1", port: int = 0) -> StandInServer:
        """The stand-in of a Qwen-VL model folder: it answers ``<answer>A</answer>``, ``B`` or
        ``C`` (by the prompt's hash and how often it was asked), then ``<|im_end|>``."""
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(model_dir)
        answers = [
            tok.encode(f"<answer>{x}</answer>", add_special_tokens=False) for x in ("A", "B", "C")
        ]
        eos = tok.convert_tokens_to_ids("<|im_end|>")
        return cls(str(model_dir), answers, eos, host=host, port=port)  # port 0: a free one

    def reply(self, token_ids: list[int]) -> dict:
        key = hashlib.sha256(json.dumps(token_ids).encode()).hexdigest()
        with self.lock:
            count = self.seen.get(key, 0)
            self.seen[key] = count + 1
            self.requests += 1
            self.during_reload += 1 if self.reloading else 0
            loaded = self.loaded
        time.sleep(self.delay_s)
        ids = self.answers[(int(key[:8], 16) + count) % len(self.answers)] + [self.eos]
        reply = {
            "prompt_token_ids": None,
            "choices": [{
                "token_ids": ids, "finish_reason": "stop",
                "logprobs": {"content": [{"token_id": t, "logprob": LOGPROB} for t in ids]},
            }],
        }  # fmt: skip
        if self.tag_loaded:
            reply["usage"] = {"prompt_tokens_details": {"cached_tokens": loaded}}
        return reply

    def start(self) -> StandInServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
