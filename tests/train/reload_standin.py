"""A stand-in for the vLLM endpoints a folder push and a sampling request reach, over real HTTP in
the test's process, that says in which order things happened.

``POST /collective_rpc`` (the reload) takes ``reload_s`` seconds, records ``reload-start`` and
``reload-done`` with the folder, and answers HTTP 500 when ``fail`` is set; ``POST
/inference/v1/generate`` records ``generate`` and answers one token; ``POST /reset_*_cache``
answers empty; ``GET /health`` answers 200."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class _Handler(BaseHTTPRequestHandler):
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
        if self.path == "/health":  # the server pool's watcher polls it
            return self._send(200, {})
        return self._send(404, {"error": "not found"})

    def do_POST(self):  # noqa: N802
        s: ReloadStandIn = self.server  # type: ignore[assignment]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        if self.path == "/collective_rpc":
            folder = body.get("kwargs", {}).get("weights_path")
            s.record("reload-start", folder)
            time.sleep(s.reload_s)
            s.record("reload-done", folder)
            if s.fail:
                return self._send(500, {"error": "reload failed: no such folder"})
            return self._send(200, {})
        if self.path == "/inference/v1/generate":
            s.record("generate", None)
            return self._send(200, {"prompt_token_ids": None, "choices": [{
                "token_ids": [7], "finish_reason": "stop",
                "logprobs": {"content": [{"token_id": 7, "logprob": -0.5}]},
            }]})  # fmt: skip
        return self._send(200, {})


class ReloadStandIn(ThreadingHTTPServer):
    """``ReloadStandIn(reload_s, fail)``; ``start()`` → itself, ``url``, ``events``."""

    def __init__(self, reload_s: float = 0.0, fail: bool = False):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.reload_s, self.fail = float(reload_s), bool(fail)
        self.events: list[tuple[str, str | None]] = []
        self._lock = threading.Lock()
        self.url = f"http://127.0.0.1:{self.server_address[1]}"

    def record(self, what: str, folder: str | None) -> None:
        with self._lock:
            self.events.append((what, folder))

    def start(self) -> ReloadStandIn:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()

    def kinds(self) -> list[str]:
        with self._lock:
            return [e for e, _ in self.events]
