"""The model locator's Hub probe tells a gated model from a missing one, against a real local
HTTP server that answers as the Hub does (``X-Error-Code``, read by huggingface_hub)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from huggingface_hub import constants

from paravt.models import locate

#: repo id -> the Hub's error code for it
ANSWERS = {"owner/gated": "GatedRepo", "owner/missing": "RepoNotFound"}


class _Hub(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        code = next((c for repo, c in ANSWERS.items() if self.path.endswith(repo)), None)
        self.send_response(401 if code == "GatedRepo" else 404)
        self.send_header("X-Error-Code", code or "RepoNotFound")
        self.send_header("X-Error-Message", f"{code} for {self.path}")
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": "no"}')

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture
def hub(monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    yield
    server.shutdown()
    server.server_close()


def test_a_gated_model_is_gated_not_missing(hub):
    # GatedRepoError derives from RepositoryNotFoundError: caught second, it read as "missing"
    assert locate._ask_hub("owner/gated")[0] == "gated"
    assert locate._ask_hub("owner/missing")[0] == "missing"
