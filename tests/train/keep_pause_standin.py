"""A stand-in for the part of a vLLM server that a keep-mode pause touches, over real HTTP.

Why: TRL's weight transfer pauses the server with ``/pause?mode=keep`` before it sends, and vLLM
then freezes every request in flight, whoever sent it, until ``/resume``. With several trainer
ranks one rank's pause freezes the others' requests; whether a push can deadlock depends on
exactly that, so the stand-in keeps it: a ``/generate`` request needs ``work_s`` seconds of
*unpaused* server time, and its clock stops while the server is paused. It records the order of
what happened (``events``), which the tests read.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import ThreadingHTTPServer

from standin_vllm import JSONHandler


class _Handler(JSONHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        s: KeepPauseServer = self.server  # type: ignore[assignment]
        if self.path == "/events":
            with s.lock:
                return self._send(list(s.events))
        self.send_error(404)
        return None

    def do_POST(self):  # noqa: N802
        s: KeepPauseServer = self.server  # type: ignore[assignment]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        if self.path.startswith("/pause"):
            s.note("pause " + self.path.partition("?")[2])
            with s.lock:
                s.paused = True
            return self._send({})
        if self.path == "/resume":
            with s.lock:
                s.paused = False
            s.note("resume")
            return self._send({})
        if self.path == "/generate":
            who = str(body.get("who", "?"))
            s.note(f"generate-start {who}")
            done, tick = 0.0, 0.02
            while done < float(body.get("work_s", 0.1)):
                time.sleep(tick)
                with s.lock:
                    done += 0 if s.paused else tick  # a keep-mode pause freezes the request
            s.note(f"generate-done {who}")
            return self._send({"who": who})
        self.send_error(404)
        return None


class KeepPauseServer(ThreadingHTTPServer):
    """``KeepPauseServer().start()``; ``url``; ``events`` (``pause mode=keep``, ``resume``,
    ``generate-start WHO``, ``generate-done WHO``, in order)."""

    daemon_threads = True

    def __init__(self, host: str = "127.0.0.1"):
        super().__init__((host, 0), _Handler)
        self.lock = threading.Lock()
        self.paused = False
        self.events: list[str] = []
        self.url = f"http://{host}:{self.server_address[1]}"

    def note(self, event: str) -> None:
        with self.lock:
            self.events.append(event)

    def start(self) -> KeepPauseServer:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
