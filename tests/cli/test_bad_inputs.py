"""Bad input ends in one line that names it and the fix, exit 2, no traceback (``--debug`` shows
it); a video is opened before any model loads; a command that succeeds around a corrupt region
logs it as one line; a batch that ran with failed questions exits 1.

Everything is real: generated videos damaged on purpose, the tiny model, a model folder whose
weights cannot load (so a load before the video check would fail differently), and an HTTP
server in this process standing in for an unreachable or missing Hub.
"""

from __future__ import annotations

import json
import random
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest


def one_line(r) -> str:
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr
    return lines[0]


@pytest.fixture(scope="module")
def garbled_bframes(bframes_video, tmp_path_factory) -> Path:
    """The B-frame video with 20 kB of noise a third of the way in: it opens, and a region of
    it fails to decode (the filtered-packet decode logs that, then decodes the normal way)."""
    data = bytearray(bframes_video.read_bytes())
    rng = random.Random(0)
    for i in range(len(data) // 3, len(data) // 3 + 20000):
        data[i] = rng.randrange(256)
    out = tmp_path_factory.mktemp("garbled") / "garbled.mp4"
    out.write_bytes(bytes(data))
    return out


def test_frames_of_a_corrupt_region_succeeds_without_a_traceback(garbled_bframes, paravt_cli):
    """What stderr may hold around a damaged region: one ``paravt: warning:`` line per failure
    a room logs (it printed ~20 lines of torchcodec traceback before), nothing else."""
    for debug in ((), ("--debug",)):
        r = paravt_cli(*debug, "frames", garbled_bframes, "-k", "8")
        assert r.returncode == 0, r.stderr
        assert "Traceback" not in r.stderr or debug
        if not debug:
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
            assert all(ln.startswith("paravt: warning:") for ln in lines), r.stderr


def test_a_logged_failure_is_one_line_and_its_traceback_is_for_debug(capsys):
    """The handler the CLI installs (paravt.logs): a record logged with its exception is one
    line naming the exception; under --debug the traceback follows."""
    import logging

    from paravt.logs import one_line_logging

    log = logging.getLogger("paravt.video.somewhere")
    for debug in (False, True):
        one_line_logging(debug)
        try:
            raise RuntimeError("decode_av_frame: Invalid data found\nsecond line")
        except RuntimeError:
            log.warning("decoding 8 frames of %s failed; decoding them the normal way", "x.mp4",
                        exc_info=True)  # fmt: skip
        err = capsys.readouterr().err.strip().splitlines()
        first = "paravt: warning: decoding 8 frames of x.mp4 failed; decoding them the normal way"
        if debug:
            assert err[0] == first and err[1] == "Traceback (most recent call last):"
        else:
            assert err == [f"{first} (RuntimeError: decode_av_frame: Invalid data found)"]
    one_line_logging(False)


@pytest.mark.parametrize("kind", ["text", "truncated", "empty"])
def test_infer_checks_the_video_before_the_model_loads(
    kind, bad_files, unloadable_model, paravt_cli
):
    video = bad_files[kind]
    r = paravt_cli("infer", video, "-q", "What?", "--model", unloadable_model)
    assert r.returncode == 2
    line = one_line(r)
    assert video.name in line and "safetensors" not in line  # the video, not the model
    assert r.stdout == ""


def test_a_stdin_batch_whose_videos_all_fail_stops_before_the_model(
    bad_files, gop_video, unloadable_model, paravt_cli, monkeypatch
):
    import io

    rows = [{"id": "broken", "question": "B?", "video": str(bad_files["text"])},
            {"id": "gone", "question": "C?", "video": str(bad_files["missing"])}]  # fmt: skip
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(json.dumps(x) + "\n" for x in rows)))
    r = paravt_cli("infer", gop_video, "-q", "-", "--model", unloadable_model)
    assert r.returncode == 2
    line = one_line(r)
    assert "no question can run: question broken" in line and "(and 1 more)" in line


def test_a_stdin_batch_runs_past_a_bad_video_and_exits_1(
    bad_files, gop_video, tiny_qwen3_dir, paravt_cli, monkeypatch
):
    """One question's unreadable video is that question's error record; the others run. The
    video is named once on stderr (the engine's warning), then the summary line."""
    import io

    rows = [{"id": "fine", "question": "A?", "video": str(gop_video)},
            {"id": "broken", "question": "B?", "video": str(bad_files["text"])}]  # fmt: skip
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(json.dumps(x) + "\n" for x in rows)))
    r = paravt_cli(
        "infer", gop_video, "-q", "-", "--model", tiny_qwen3_dir, "--json",
        "--frames", "2", "--max-turns", "1", "--set", "engine.max_new_tokens=4",
    )  # fmt: skip
    assert r.returncode == 1, r.stderr
    records = {x["record"]["id"]: x["record"] for x in map(json.loads, r.stdout.splitlines())}
    assert records["fine"]["status"] == "ok" and records["broken"]["error_kind"] == "video"
    lines = r.stderr.strip().splitlines()
    assert "Traceback" not in r.stderr
    assert sum(bad_files["text"].name in ln for ln in lines) == 1
    assert lines[-1] == "paravt: 1 of 2 questions failed: broken (video)"


@pytest.fixture(scope="module")
def undecodable(faststart_video, tmp_path_factory) -> Path:
    """The index at the front survives, every byte of media data is zero: the video opens
    (its packets are listed) and no frame decodes."""
    data = bytearray(faststart_video.read_bytes())
    at = data.find(b"mdat") + 4
    data[at:] = bytes(len(data) - at)
    out = tmp_path_factory.mktemp("undecodable") / "zeroed.mp4"
    out.write_bytes(bytes(data))
    return out


def test_a_stdin_batch_in_which_a_question_fails_exits_1(
    undecodable, gop_video, tiny_qwen3_dir, paravt_cli, monkeypatch
):
    import io

    rows = [{"id": "fine", "question": "A?", "video": str(gop_video)},
            {"id": "zeroed", "question": "B?", "video": str(undecodable)}]  # fmt: skip
    monkeypatch.setattr("sys.stdin", io.StringIO("".join(json.dumps(x) + "\n" for x in rows)))
    r = paravt_cli(
        "infer", gop_video, "-q", "-", "--model", tiny_qwen3_dir, "--json",
        "--frames", "2", "--max-turns", "1", "--set", "engine.max_new_tokens=4",
    )  # fmt: skip
    assert r.returncode == 1, r.stderr
    records = [json.loads(x)["record"] for x in r.stdout.splitlines()]
    assert {x["id"]: x["status"] for x in records} == {"fine": "ok", "zeroed": "error"}
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("paravt: 1 of 2 questions failed") and "zeroed" in last
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("what", ["empty", "no_config", "missing"])
def test_a_model_folder_that_is_not_one_is_one_line(what, tmp_path, gop_video, paravt_cli):
    folder = tmp_path / "nomodel"
    if what != "missing":
        folder.mkdir()
    if what == "no_config":
        (folder / "notes.txt").write_text("x")
    r = paravt_cli("infer", gop_video, "-q", "What?", "--model", f"{folder}")
    assert r.returncode == 2
    line = one_line(r)
    assert str(folder) in line
    assert {"empty": "empty", "no_config": "config.json", "missing": "model folder not found"}[
        what
    ] in line


@pytest.mark.parametrize("command", ["train", "sft"])
def test_train_and_sft_with_an_empty_model_folder(command, tmp_path, paravt_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nomodel").mkdir()
    recipe = "cpu-smoke" if command == "train" else "sft-smoke"
    r = paravt_cli(command, "--config", recipe, "--set", "model=./nomodel",
                   "--set", f"output_dir={tmp_path / 'run'}")  # fmt: skip
    assert r.returncode == 2
    line = [ln for ln in r.stderr.splitlines() if ln.startswith("paravt:")]
    assert len(line) == 1 and "model=./nomodel" in line[0] and "empty" in line[0], r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr


class _Hub(BaseHTTPRequestHandler):
    """A Hub that answers every request with ``status`` and counts them."""

    status = 503
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        type(self).hits.append(self.path)
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"error": "down"}')

    do_HEAD = do_GET  # noqa: N815

    def log_message(self, *args):
        pass


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """huggingface_hub pointed at a server in this process and at an empty cache."""
    from huggingface_hub import constants

    def start(status: int):
        handler = type("Hub", (_Hub,), {"status": status, "hits": []})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{server.server_port}")
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        return server, handler

    servers = []
    yield lambda status: servers.append(start(status)) or servers[-1][1]
    for server, _ in servers:
        server.shutdown()


def test_a_model_id_with_no_hub_fails_at_once(hub, gop_video, paravt_cli):
    """A typo of the demo's name, not cached, the Hub answering 503: one request, one line
    (transformers' own path retried 5 times with back-off per file: 145 s, 66 lines)."""
    handler = hub(503)
    r = paravt_cli("infer", gop_video, "-q", "What?", "--model", "toy-dmeo")
    assert r.returncode == 2
    line = one_line(r)
    assert "not in the local Hugging Face cache" in line and "cannot be reached" in line
    assert "did you mean toy-demo?" in line
    assert [h for h in handler.hits if "/models/" in h] == ["/api/models/toy-dmeo"]  # no retry


def test_a_model_id_the_hub_does_not_know(hub, gop_video, paravt_cli):
    handler = hub(404)
    r = paravt_cli("infer", gop_video, "-q", "What?", "--model", "someone/no-such-model")
    assert r.returncode == 2
    assert "no such model on the Hub" in one_line(r)
    assert len([h for h in handler.hits if "/models/" in h]) == 1


def test_eval_with_a_closed_hub_port_stops_before_its_run(
    hub, gop_video, paravt_cli, monkeypatch, tmp_path
):
    import socket

    from huggingface_hub import constants

    hub(503)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{port}")
    row = {"id": "q", "video": str(gop_video), "question": "What?", "question_type": "oe",
           "answer": "x"}  # fmt: skip
    (tmp_path / "eval.jsonl").write_text(json.dumps(row) + "\n")
    r = paravt_cli("eval", "--benchmark", "jsonl", "--data", tmp_path, "--videos", tmp_path,
                   "--out", tmp_path / "run", "--model", "a/b")  # fmt: skip
    assert r.returncode == 2
    assert "cannot be reached" in one_line(r)
    assert not (tmp_path / "run" / "results.jsonl").exists()


def test_eval_without_a_benchmark_is_a_usage_error(paravt_cli):
    r = paravt_cli("eval")
    assert r.returncode == 2
    assert "--benchmark" in r.stderr and r.stdout == ""


def test_eval_opens_a_video_before_the_model_loads_for_it(
    bad_files, unloadable_model, tmp_path, paravt_cli
):
    """A split whose only video cannot be read: its sample is a video error row, in one line,
    and the model (whose weights would fail to load) is never loaded. No question could be
    scored, so the run exits 1 and says so."""
    row = {"id": "q", "video": str(bad_files["text"]), "question": "What?",
           "question_type": "oe", "answer": "x"}  # fmt: skip
    (tmp_path / "eval.jsonl").write_text(json.dumps(row) + "\n")
    r = paravt_cli("eval", "--benchmark", "jsonl", "--data", tmp_path, "--videos", tmp_path,
                   "--out", tmp_path / "run", "--model", unloadable_model, "--json")  # fmt: skip
    assert r.returncode == 1, r.stderr
    assert "no question could be scored: all 1 errored (1 video)" in r.stderr
    result = json.loads((tmp_path / "run" / "results.jsonl").read_text())
    assert (
        result["error"]["kind"] == "video" and bad_files["text"].name in result["error"]["message"]
    )
    assert "weights" not in r.stderr and "Traceback" not in r.stderr


def test_a_multiple_choice_question_with_one_option_is_refused(
    gop_video, unloadable_model, paravt_cli, monkeypatch
):
    import io

    r = paravt_cli("infer", gop_video, "-q", "Which?", "--option", "red",
                   "--model", unloadable_model)  # fmt: skip
    assert r.returncode == 2
    line = one_line(r)
    assert "--option was given once ('red')" in line and "at least 2" in line
    row = {"id": "solo", "question": "Which?", "options": ["red"]}
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps(row) + "\n"))
    r = paravt_cli("infer", gop_video, "-q", "-", "--model", unloadable_model)
    assert r.returncode == 2
    assert "episode 'solo' has 1 option ('red')" in one_line(r)


def test_a_training_row_with_one_option_is_skipped_with_its_reason(tmp_path):
    from paravt.data.rows import read_rows

    rows = [{"id": "r1", "video": "v.mp4", "question": "Which?", "options": ["red"],
             "answer": "A"},
            {"id": "r2", "video": "v.mp4", "question": "Which?", "options": ["red", "blue"],
             "answer": "A"}]  # fmt: skip
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = read_rows(tmp_path / "train.jsonl", tmp_path)
    assert [r.id for r in got.rows] == ["r2"]
    assert [s.id for s in got.skipped] == ["r1"] and "has 1 option" in got.skipped[0].reason
