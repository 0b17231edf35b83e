"""The ``openai`` backend against a real OpenAI-compatible HTTP server on 127.0.0.1.

The server (stdlib ``http.server`` in a thread) answers chat completions from a script keyed by
episode and turn, can fail a turn with HTTP errors (transiently or for good), and records every
request body and how many requests were in flight at once.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import torch
from agent_helpers import call, small_config
from PIL import Image

from paravt.agent.engine import EpisodeEngine
from paravt.backends.openai import OpenAIBackend
from paravt.kernels import resized_size
from paravt.schema.episodes import EpisodeInput


class FakeServer:
    """Script: ``{(episode, turn): text | ("fail", status, times)}``; episode read from the question."""

    def __init__(self, script: dict):
        self.script = script
        self.bodies: list[dict] = []
        self.attempts: dict[tuple, int] = {}
        self.inflight = 0
        self.max_inflight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.inflight += 1
                    server.max_inflight = max(server.max_inflight, server.inflight)
                    server.bodies.append(body)
                try:
                    time.sleep(0.05)  # let concurrent requests overlap
                    status, payload = server.answer(self.path, body)
                finally:
                    with server.lock:
                        server.inflight -= 1
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def answer(self, path: str, body: dict) -> tuple[int, dict]:
        if path != "/v1/chat/completions":
            return 404, {"error": "not found"}
        user = body["messages"][1]["content"]
        question = next(p["text"] for p in user if p["type"] == "text" and "Question:" in p["text"])
        episode = question.split("[")[1].split("]")[0]
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        key = (episode, turn)
        with self.lock:
            self.attempts[key] = self.attempts.get(key, 0) + 1
            attempt = self.attempts[key]
        item = self.script[key]
        if isinstance(item, tuple):
            _, status, times = item
            if times is None or attempt <= times:
                return status, {"error": {"message": f"scripted failure {status}"}}
            item = "<answer>B</answer>"
        usage = {"prompt_tokens": 100 + turn, "completion_tokens": 7}
        if turn:  # a later turn hits the prefix cache (vLLM's --enable-prompt-tokens-details)
            usage["prompt_tokens_details"] = {"cached_tokens": 96}
        return 200, {
            "id": "x",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": item},
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = FakeServer({})
    yield s
    s.close()


def test_episodes_over_http_with_concurrency_retries_and_server_errors(server, pancake):
    server.script.update(
        {
            ("ok", 0): "<think>two windows</think>" + call(0, 3) + call(5, 8),
            ("ok", 1): "<think>seen</think><answer>A</answer>",
            ("flaky", 0): call(1, 2),
            ("flaky", 1): ("fail", 503, 1),  # fails once, the retry succeeds
            ("down", 0): call(1, 2),
            ("down", 1): ("fail", 500, None),  # the server error mid-episode persists
            ("bad", 0): ("fail", 400, None),  # a client error is not retried
        }
    )
    backend = OpenAIBackend(server.base_url, "paravt-test", concurrency=2, retries=2)
    eps = [
        EpisodeInput(e, pancake, f"[{e}] What happens?", ["x", "y"])
        for e in ("ok", "flaky", "down", "bad")
    ]
    recs = {r.id: r for r in EpisodeEngine(backend, small_config()).run(eps)}
    assert recs["ok"].status == "ok" and recs["ok"].prediction == "A"
    assert recs["ok"].tool_counts.executed_ok == 2
    assert recs["ok"].tokens.generated == 14 and recs["ok"].turns[1].prompt_tokens == 101
    # the server's prefix-cache count reaches the record; none reported is none cached
    assert [t.cached_tokens for t in recs["ok"].turns] == [0, 96]
    assert recs["flaky"].status == "ok" and recs["flaky"].prediction == "B"
    assert server.attempts[("flaky", 1)] == 2
    down = recs["down"]
    assert down.status == "error" and "HTTP 500" in down.error and "3 attempts" in down.error
    assert down.prediction is None and server.attempts[("down", 1)] == 3
    assert recs["bad"].status == "error" and "HTTP 400" in recs["bad"].error
    assert server.attempts[("bad", 0)] == 1
    assert server.max_inflight == 2  # concurrent, and never above the bound
    # wire format: images as base64 JPEG data URLs, tool results as a user turn in <tool_response>
    body = next(
        b
        for b in server.bodies
        if "[ok]" in json.dumps(b["messages"][1])
        and sum(m["role"] == "assistant" for m in b["messages"]) == 1
    )
    assert [m["role"] for m in body["messages"]] == ["system", "user", "assistant", "user"]
    tool_turn = body["messages"][3]["content"]
    texts = "".join(p["text"] for p in tool_turn if p["type"] == "text")
    assert texts.count("<tool_response>") == 2 and "frames from 0.0s to 3.0s." in texts
    urls = [p["image_url"]["url"] for p in tool_turn if p["type"] == "image_url"]
    assert len(urls) == sum(c.n_frames for c in recs["ok"].calls)
    head, b64 = urls[0].split(",", 1)
    assert head == "data:image/jpeg;base64"
    img = Image.open(io.BytesIO(base64.b64decode(b64)))
    assert img.format == "JPEG"
    # sent at the frame's own pixel budget (Qwen3-VL size rule), not at full resolution
    item = recs["ok"].stream.images[4]
    h, w = item.data.shape[-2:]
    assert (img.height, img.width) == resized_size(
        h, w, "qwen3-vl", item.min_pixels, item.max_pixels
    )
    assert img.height * img.width <= item.max_pixels < h * w
    assert body["max_tokens"] == 1024 and body["model"] == "paravt-test"


def test_unreachable_server_is_an_error_not_an_answer(pancake):
    backend = OpenAIBackend("http://127.0.0.1:9/v1", "m", retries=1, timeout_s=2)
    [rec] = EpisodeEngine(backend, small_config()).run(
        [EpisodeInput("x", pancake, "Q?", ["a", "b"])]
    )
    assert rec.status == "error" and "cannot reach" in rec.error and rec.prediction is None


def test_wire_format_options_tool_role_and_prefill():
    from paravt.schema.episodes import GenRequest, ImageItem

    frame = ImageItem(torch.zeros(3, 8, 8, dtype=torch.uint8), 1.0, "tool", 784, 4096)
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [{"type": "text", "text": "Q"}]},
        {"role": "assistant", "content": "<think>a</think><tool_call>{}</tool_call>"},
        {"role": "tool", "content": [{"type": "image"}, {"type": "text", "text": "1 frames"}]},
        {"role": "tool", "content": [{"type": "text", "text": "bad window"}]},
    ]
    req = GenRequest("e", 1, "main", msgs, [frame], max_new_tokens=9, prefill="<think>\n")
    as_tool = OpenAIBackend("http://x/v1", "m", tool_role="tool", image_format="png")
    wire = as_tool.wire_messages(req)
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "tool"]
    assert wire[3]["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
    as_user = OpenAIBackend("http://x/v1", "m")
    body = as_user.payload(req)
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant"]  # tools merged, prefill
    merged = "".join(p.get("text", "") for p in body["messages"][3]["content"])
    assert (
        merged
        == "<tool_response>\n1 frames\n</tool_response>\n<tool_response>\nbad window\n</tool_response>"
    )
    assert body["messages"][-1] == {"role": "assistant", "content": "<think>\n"}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert "tools" not in body  # tool_prompt=paravt: the schema is in the system text
    # vLLM / SGLang would strip <tool_call> and </think> where a tokenizer marks them special
    assert body["skip_special_tokens"] is False


def test_native_tool_prompt_sends_the_schema_for_the_server_template_to_render():
    """engine.tool_prompt=native over HTTP: the server's template renders ``tools``; paravt parses
    the calls itself, so the server is asked not to (``tool_choice: none``)."""
    from paravt.agent.prompts import tool_schema
    from paravt.schema.episodes import GenRequest

    backend = OpenAIBackend("http://x/v1", "m")  # resize_arch qwen3-vl: the native family
    engine = EpisodeEngine(backend, small_config())
    assert engine.tool_prompt == "native" and engine.tools == [tool_schema()]
    assert json.dumps(tool_schema()) not in engine.system_text
    req = GenRequest("e", 0, "main", [{"role": "user", "content": "Q"}], [], 9, tools=engine.tools)
    body = backend.payload(req)
    assert body["tools"] == [tool_schema()] and body["tool_choice"] == "none"
    q25 = EpisodeEngine(OpenAIBackend("http://x/v1", "m", resize_arch="qwen2.5-vl"), small_config())
    assert q25.tool_prompt == "paravt" and q25.tools is None
    assert json.dumps(tool_schema()) in q25.system_text


def test_each_image_is_encoded_once_while_it_lives():
    """A context is resent whole every turn: its images are encoded once, then reused."""
    import gc

    from paravt.schema.episodes import GenRequest, ImageItem

    frame = ImageItem(torch.full((3, 8, 8), 7, dtype=torch.uint8), 1.0, "overview", 784, 4096)
    msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Q"}]}]
    backend = OpenAIBackend("http://x/v1", "m")
    urls = [
        backend.wire_messages(GenRequest(f"e{i}", i, "main", msgs, [frame], max_new_tokens=4))[0][
            "content"
        ][0]["image_url"]["url"]
        for i in range(3)
    ]
    assert urls[0].startswith("data:image/jpeg;base64,")
    assert urls[1] is urls[0] and urls[2] is urls[0]  # the same string: not encoded again
    del frame
    gc.collect()
    assert backend._urls == {}  # a dead image leaves the cache


def test_frames_keep_full_resolution_only_when_asked():
    from paravt.backends.openai import budget_frame
    from paravt.schema.episodes import ImageItem

    frame = ImageItem(
        torch.randint(0, 256, (3, 240, 426), dtype=torch.uint8), 0.0, "tool", 784, 50176
    )
    assert tuple(budget_frame(frame, None).shape) == (3, 240, 426)
    for arch, factor in (("qwen3-vl", 32), ("qwen2.5-vl", 28)):
        out = budget_frame(frame, arch)
        h, w = out.shape[-2:]
        assert out.dtype == torch.uint8 and h % factor == 0 and w % factor == 0
        assert (h, w) == resized_size(240, 426, arch, 784, 50176)


# -- servers that parse the reply, and a pre-fill through the chat template ---------------------
def _served_message(processor, text: str, prompt: str) -> dict:
    """What ``transformers serve`` answers for a Qwen-VL model that generated ``text`` after
    ``prompt``: its own reply parser, called as its chat-completion handler calls it."""
    from types import SimpleNamespace

    from transformers.cli.serving.utils import parse_assistant_message

    tok = processor.tokenizer
    ids = tok(text + "<|im_end|>", add_special_tokens=False)["input_ids"]
    prompt_ids = tok(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
    model = SimpleNamespace(config=SimpleNamespace(model_type="qwen3_vl"))
    content, reasoning, calls = parse_assistant_message(processor, model, ids, prompt_ids)
    message = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    if calls:
        message["tool_calls"] = [
            {"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in calls
        ]
    return message


@pytest.fixture(scope="module")
def toy_split(tmp_path_factory):
    """Two toy-task videos of 120-180 s (the real generator, under a second)."""
    from paravt.toy.generate import make_toy_task
    from paravt.toy.task import ToyTaskConfig

    out = tmp_path_factory.mktemp("toy")
    make_toy_task(ToyTaskConfig(out=str(out), n=2, seed=7, split="eval", visibility_videos=0))
    return out


@pytest.mark.parametrize("prefill", ["<think>\n", ""])
def test_a_reply_the_server_split_comes_back_as_generated(q3_processor, toy_split, prefill):
    """The toy oracle's real turns (a think and a parallel sweep of five calls; a think and an
    answer), split by the server's own parser into reasoning, content and tool_calls, are
    written back byte for byte, so the engine parses the same calls as from a local model."""
    from paravt.backends.openai import reply_text
    from paravt.toy.oracle import ToyOracleBackend

    out = toy_split
    rows = [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()][:2]
    inputs = [
        EpisodeInput(r["id"], str(out / r["video"]), r["question"], r["options"],
                     r["question_type"], 4, r["answer"])
        for r in rows
    ]  # fmt: skip
    records = EpisodeEngine(ToyOracleBackend(), small_config(think_prefix=prefill)).run(inputs)
    prompt = "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n" + prefill
    turns = [t.text.removeprefix(prefill) for rec in records for t in rec.turns]
    assert any("<tool_call>" in t for t in turns) and any("<answer>" in t for t in turns)
    for text in turns:
        message = _served_message(q3_processor, text, prompt)
        if "<tool_call>" in text:
            assert message["content"] == "" and len(message["tool_calls"]) == 5  # split apart
        assert reply_text(message, "stop", prefill) == text


def test_a_think_that_never_closed_stays_open():
    from paravt.backends.openai import reply_text

    # the parser keeps the end marker inside a reasoning region that never closed
    message = {"content": "", "reasoning_content": "no square <answer>B</answer><|im_end|>"}
    assert reply_text(message, "stop", "<think>\n") == "no square <answer>B</answer>"
    assert reply_text(message, "stop", "") == "<think>\nno square <answer>B</answer>"
    cut = {"content": "", "reasoning_content": "still thinking"}
    assert reply_text(cut, "length", "<think>\n") == "still thinking"
    # transformers serve 5.24 fills the missing content of such a reply with the model's name
    named = {"content": "/models/toy", "reasoning_content": "still thinking"}
    assert reply_text(named, "length", "<think>\n", served_model="/models/toy") == "still thinking"
    assert (
        reply_text({"content": "<answer>A</answer>"}, "stop", "<think>\n") == "<answer>A</answer>"
    )


def test_prefill_through_the_chat_template(q3_processor, tiny_qwen3_dir, tmp_path):
    """``prefill_via=template`` (transformers serve refuses continue_final_message): the model's
    template with the pre-fill after its generation prompt, rendered as the server renders it."""
    from paravt.agent.config import BackendConfig
    from paravt.backends.openai import read_chat_template
    from paravt.errors import ConfigError
    from paravt.schema.episodes import GenRequest

    cfg = BackendConfig(kind="openai", prefill_via="template", chat_template=str(tiny_qwen3_dir))
    backend = OpenAIBackend.from_config(cfg)
    msgs = [{"role": "user", "content": [{"type": "text", "text": "Q"}]}]
    body = backend.payload(GenRequest("e", 0, "main", msgs, [], 9, prefill="<think>\n"))
    assert "continue_final_message" not in body and "add_generation_prompt" not in body
    assert "skip_special_tokens" not in body  # a field of vLLM's and SGLang's, not of the spec
    assert [m["role"] for m in body["messages"]] == ["user"]
    kwargs = body["chat_template_kwargs"]
    assert kwargs["paravt_prefill"] == "<think>\n"
    rendered = q3_processor.apply_chat_template(
        msgs, add_generation_prompt=True, tokenize=False, **kwargs
    )
    plain = q3_processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    assert rendered == plain + "<think>\n"
    no_prefill = backend.payload(GenRequest("e", 0, "main", msgs, [], 9))
    assert "chat_template_kwargs" not in no_prefill
    assert (
        read_chat_template(str(tiny_qwen3_dir / "chat_template.jinja"))
        == q3_processor.chat_template
    )
    with pytest.raises(ConfigError, match="chat template"):
        OpenAIBackend("http://x/v1", "m", prefill_via="template")
    with pytest.raises(ConfigError, match="no chat template"):
        read_chat_template(str(tmp_path))
    with pytest.raises(ConfigError, match="prefill_via"):
        BackendConfig(prefill_via="prefix")
