"""Requests per second of the ``openai`` backend against a local server.

Claim: the backend on the ``openai`` SDK's ``AsyncOpenAI`` (pooled keep-alive connections, one
event loop, no thread per request) sends at least as many requests a second as the hand-written
``urllib`` transport it replaced (a fresh connection per request, a thread pool), for the same
requests through the same public calls.

The server is a stand-in OpenAI chat endpoint in a process of its own (stdlib
``ThreadingHTTPServer``, HTTP/1.1 keep-alive, a fixed 8-token reply at once, no model): what is
measured is the client's transport, not a model. Each row sends ``--requests`` chat requests
(a system and a user message, ``max_tokens`` 8) with ``concurrency`` in flight, through

- ``generate``: one synchronous round of all of them (``OpenAIBackend.generate``);
- ``agenerate``: one coroutine each, gathered on the caller's event loop (what the episode engine
  does when episodes advance on their own);

``--repeats`` times each, after one warm-up round; the row keeps every run's requests/s, their
median, and the client process's CPU seconds per request (``time.process_time``: the 2-core host
is shared, and CPU is what the transport costs). The commands (run the ``before`` row at the
commit before the change, with that commit's ``src`` first on ``PYTHONPATH``; the script itself is
the same file both times):

    git archive a34125c src | tar -x -C /tmp/paravt-before
    PYTHONPATH=/tmp/paravt-before/src OMP_NUM_THREADS=1 python benchmarks/bench_openai_rps.py --label before
    OMP_NUM_THREADS=1 python benchmarks/bench_openai_rps.py --label after

Output: ``benchmarks/results/bench_openai_rps.json``, one entry per label (a rerun of a label
replaces it), each with the paravt source it imported and the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import multiprocessing
import os
import platform
import statistics
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from paravt.backends.openai import OpenAIBackend
from paravt.schema.episodes import GenRequest

RESULTS = Path(__file__).resolve().parent / "results"
OUT = RESULTS / "bench_openai_rps.json"
REPLY = {
    "id": "bench",
    "object": "chat.completion",
    "created": 0,
    "model": "bench",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {"role": "assistant", "content": "<answer>A</answer>"},
        }
    ],
    "usage": {"prompt_tokens": 40, "completion_tokens": 8, "total_tokens": 48},
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a client that pools connections may reuse them
    # TCP_NODELAY, as uvicorn sets it: else the body, written after the headers, waits for the
    # client's delayed ACK (~40 ms) on a kept-alive connection
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def _send(self, body: dict) -> None:
        raw = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_GET(self):  # noqa: N802 - http.server's name
        self._send({"object": "list", "data": [{"id": "bench", "object": "model"}]})

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._send(REPLY)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the listen backlog: 5 by default resets a burst of connections


def _serve(port_out) -> None:
    httpd = _Server(("127.0.0.1", 0), _Handler)
    port_out.put(httpd.server_address[1])
    httpd.serve_forever()


def _requests(n: int) -> list[GenRequest]:
    msgs = [
        {"role": "system", "content": "You answer questions about videos."},
        {"role": "user", "content": [{"type": "text", "text": "Which colour was the square?"}]},
    ]
    return [
        GenRequest(f"e{i}", 0, "main", msgs, [], max_new_tokens=8, key=f"e{i}/t0") for i in range(n)
    ]


def _timed(fn) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def run_row(backend: OpenAIBackend, mode: str, n: int, repeats: int) -> dict:
    def once() -> None:
        reqs = _requests(n)
        if mode == "generate":
            gens = backend.generate(reqs)
        else:

            async def every():
                return await asyncio.gather(*(backend.agenerate(r) for r in reqs))

            gens = asyncio.run(every())
        bad = [g.error for g in gens if g.error]
        if bad:
            raise SystemExit(f"{len(bad)} requests failed: {bad[0]}")

    once()  # warm-up (connections, threads)
    runs = [_timed(once) for _ in range(repeats)]
    rps = [n / wall for wall, _ in runs]
    return {
        "mode": mode,
        "requests": n,
        "concurrency": backend.concurrency,
        "rps_runs": [round(r, 1) for r in rps],
        "rps_median": round(statistics.median(rps), 1),
        "client_cpu_ms_per_request": round(1000 * statistics.median(c for _, c in runs) / n, 3),
    }


def _source() -> dict:
    """Which backend code ran (no host path): the hash of its file and the transport it uses."""
    import paravt.backends.openai as module

    code = Path(module.__file__).read_bytes()
    return {
        "backends_openai_sha1": hashlib.sha1(code).hexdigest()[:12],
        "transport": "openai SDK (AsyncOpenAI)" if b"AsyncOpenAI" in code else "urllib",
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--label", required=True, help="before / after: the entry this run writes")
    ap.add_argument("--requests", type=int, default=400)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[8, 32])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()

    ctx = multiprocessing.get_context("spawn")
    port_q = ctx.Queue()
    server = ctx.Process(target=_serve, args=(port_q,), daemon=True)
    server.start()
    try:
        url = f"http://127.0.0.1:{port_q.get(timeout=30)}/v1"
        load0 = os.getloadavg()
        rows = []
        for conc in a.concurrency:
            backend = OpenAIBackend(url, "bench", concurrency=conc, retries=0, timeout_s=30)
            for mode in ("generate", "agenerate"):
                rows.append(run_row(backend, mode, a.requests, a.repeats))
                print(json.dumps(rows[-1]))
            close = getattr(backend, "close", None)
            if close is not None:
                close()
        load1 = os.getloadavg()
    finally:
        server.terminate()
        server.join(10)
    entry = {
        "rows": rows,
        "source": _source(),
        "server": "stdlib ThreadingHTTPServer stand-in, own process, HTTP/1.1 keep-alive, TCP_NODELAY",
        "loadavg_before_after": [round(load0[0], 2), round(load1[0], 2)],
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "command": f"OMP_NUM_THREADS=1 python benchmarks/bench_openai_rps.py --label {a.label}",
    }
    data = json.loads(a.out.read_text()) if a.out.is_file() else {}
    data[a.label] = entry
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(data, indent=2) + "\n")
    print(f"wrote {a.out} [{a.label}]")


if __name__ == "__main__":
    main()
