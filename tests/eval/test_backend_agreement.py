"""The ``hf`` and ``openai`` backends agree.

- Without a server: at every turn of real toy episodes (the oracle in token space, so tool turns
  carry real decoded frames), the prompt ``transformers serve`` would build from the ``openai``
  backend's request — its own message conversion and the model's chat template — is the
  ``hf`` backend's prompt, token for token, and its pixels are the same.
- ``compare_answers`` reads answers as scoring does and counts every question.
- ``slow``: a real ``transformers serve`` subprocess on loopback and the ``hf`` backend give the
  same answers on toy questions (``run_agreement``).
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from paravt.agent.backend import BackendBase
from paravt.agent.config import CropSettings, EngineConfig
from paravt.agent.engine import EpisodeEngine
from paravt.backends.openai import OpenAIBackend
from paravt.eval.agreement import answer_key, compare_answers
from paravt.eval.results import ResultRow
from paravt.schema.episodes import EpisodeInput

#: the toy experiment's frames: 32x32, one vision token each
PIXELS = 1024


@pytest.fixture(scope="module")
def toy_split(tmp_path_factory):
    """Three toy-task mcq questions (the real generator, about a second)."""
    from paravt.toy.generate import make_toy_task
    from paravt.toy.task import ToyTaskConfig

    out = tmp_path_factory.mktemp("toy")
    cfg = ToyTaskConfig(
        out=str(out), n=3, seed=7, split="eval", visibility_videos=0, question_types=["mcq"]
    )
    make_toy_task(cfg)
    return out


@pytest.fixture(scope="module")
def q3_processor(tiny_qwen3_dir):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(str(tiny_qwen3_dir))


def _engine_config(**kw) -> EngineConfig:
    crop = CropSettings(max_frames=16, min_pixels=PIXELS, max_pixels=PIXELS)
    base = {"frames": 4, "min_pixels": PIXELS, "max_pixels": PIXELS, "think_prefix": "<think>\n"}
    return EngineConfig(**{**base, "crop": crop, **kw})


def _inputs(out) -> list[EpisodeInput]:
    rows = [json.loads(line) for line in (out / "eval.jsonl").read_text().splitlines()]
    return [
        EpisodeInput(r["id"], str(out / r["video"]), r["question"], r["options"],
                     r["question_type"], 4, r["answer"])
        for r in rows
    ]  # fmt: skip


class ServerView(BackendBase):
    """Wraps a token-space backend; for each request also builds the prompt that ``transformers
    serve`` renders from the ``openai`` backend's request body, and keeps both."""

    def __init__(self, inner, processor, openai: OpenAIBackend):
        self.inner, self.processor, self.openai = inner, processor, openai
        self.codec = inner.codec
        self.seen: list[tuple] = []

    def generate(self, requests):
        from transformers.cli.serving.utils import BaseHandler, Modality

        for r in requests:
            body = self.openai.payload(r)
            msgs = BaseHandler.get_processor_inputs_from_messages(body["messages"], Modality.VLM)
            served = self.processor.apply_chat_template(
                msgs, add_generation_prompt=True, tools=body.get("tools"), return_tensors="pt",
                return_dict=True, tokenize=True, **body.get("chat_template_kwargs", {}),
            )  # fmt: skip
            self.seen.append((r, served))
        return self.inner.generate(requests)


@pytest.mark.parametrize("tool_role", ["tool", "user"])
def test_the_server_renders_the_prompt_the_hf_backend_builds(
    toy_split, tiny_qwen3_dir, q3_processor, tool_role
):
    from paravt.toy.oracle import ToyOracleBackend

    openai = OpenAIBackend(
        "http://x/v1", str(tiny_qwen3_dir), tool_role=tool_role, image_format="png",
        prefill_via="template", chat_template=q3_processor.chat_template,
    )  # fmt: skip
    view = ServerView(ToyOracleBackend(processor=tiny_qwen3_dir), q3_processor, openai)
    records = EpisodeEngine(view, _engine_config()).run(_inputs(toy_split)[:2])
    assert all(r.status == "ok" and r.tool_counts.executed_ok == 5 for r in records)
    assert {r.turn for r, _ in view.seen} == {0, 1}  # the sweep turn, then the answer turn
    for req, served in view.seen:
        assert served["input_ids"][0].tolist() == list(req.tokens.ids), (req.episode_id, req.turn)
        assert torch.equal(served["image_grid_thw"], req.tokens.image_grid_thw)
        assert torch.equal(
            served["pixel_values"], req.tokens.pixel_values.to(served["pixel_values"].dtype)
        )


def _row(qid, text, kind="mcq", error=None, options=("red", "blue", "green", "cyan")):
    return ResultRow.from_dict({
        "id": qid,
        "answer_text": text,
        "error": error,
        "prediction": text,
        "sample": {"question_type": kind, "options": list(options)},
    })  # fmt: skip


def test_answers_compare_as_scoring_reads_them():
    assert answer_key(_row("a", "The answer is B")) == answer_key(_row("a", "B")) == "B"
    assert answer_key(_row("a", "blue")) == "B"  # the option's own text chooses it
    assert answer_key(_row("t", "from 41 to 44 s", "tvg")) == answer_key(
        _row("t", "[41.0, 44.0]", "tvg")
    )
    failed = _row("a", None, error={"kind": "backend", "message": "HTTP 500"})
    assert answer_key(failed) == ("error", "backend") != answer_key(_row("a", None))
    hf = [_row("1", "B"), _row("2", "C"), _row("3", "A"), _row("4", "D")]
    openai = [
        _row("1", "<answer>B</answer>"),
        _row("2", "A"),
        dataclasses.replace(failed, id="3"),
        _row("5", "A"),
    ]
    report = compare_answers(hf, openai)
    assert report["n"] == 5 and report["same"] == 1 and report["agreement"] == pytest.approx(0.2)
    assert report["same_final_turn"] == 0  # "B" and "<answer>B</answer>" read alike, differ as text
    by_id = {d["id"]: d for d in report["disagreements"]}
    assert by_id["2"]["hf"]["answer"] == "C" and by_id["2"]["openai"]["answer"] == "A"
    assert by_id["3"]["openai"]["error"]["kind"] == "backend"
    assert by_id["4"]["missing"] == ["openai"] and by_id["5"]["missing"] == ["hf"]


@pytest.mark.slow
def test_hf_and_transformers_serve_answer_alike(toy_split, tiny_qwen3_dir, tmp_path):
    """A real ``transformers serve`` subprocess (CPU, one thread, a free loopback port) and the
    ``hf`` backend on the same toy questions at temperature 0: the same answers, and the same
    final turns up to the whitespace the server's reply parser trims (about 25 s)."""
    pytest.importorskip("fastapi", reason="needs transformers[serving] (the dev extra)")
    import transformers
    from packaging.version import Version

    if Version(transformers.__version__) < Version("5.24"):
        # measured on 5.19 (the vLLM environment's): GET /v1/models lists the Hub cache's models
        # only, and answers HTTP 500 where that folder does not exist; the vLLM environment
        # serves with vLLM instead (tests/eval/test_vllm_server.py)
        pytest.skip(f"transformers serve {transformers.__version__} cannot list a local model")
    from paravt.agent.config import BackendConfig
    from paravt.eval.agreement import ServeSettings, run_agreement
    from paravt.eval.config import EvalConfig
    from paravt.eval.results import read_results

    cfg = EvalConfig(
        benchmark="jsonl", data=str(toy_split), videos=str(toy_split), out=str(tmp_path / "agree"),
        backend=BackendConfig(model=str(tiny_qwen3_dir)), engine=_engine_config(max_new_tokens=16),
    )  # fmt: skip
    report = run_agreement(cfg, ServeSettings(threads=1, startup_timeout_s=120))
    assert report["n"] == 3 and report["agreement"] >= 0.95, report["disagreements"]
    assert report["headline"]["openai"]["errors"] == 0
    finals = {}
    for side in ("hf", "openai"):
        rows = read_results(tmp_path / "agree" / side / "results.jsonl")
        finals[side] = {r.id: " ".join(r.prediction.split()) for r in rows}
    assert finals["hf"] == finals["openai"]
    assert (tmp_path / "agree" / "agreement.json").is_file()
    assert "Shutting down" in (tmp_path / "agree" / "serve.log").read_text()  # shut down


def test_a_raw_reply_view_returns_replies_as_written(tiny_qwen3_dir, q3_processor, tmp_path):
    """Served through ``raw_reply_view`` the reply is the assistant turn as written (pre-fill
    included), so a malformed call block reaches paravt's parser instead of failing the request;
    the model folder is left untouched."""
    from paravt.backends.openai import reply_text
    from paravt.eval.agreement import RAW_RESPONSE_TEMPLATE, raw_reply_view

    before = (tiny_qwen3_dir / "tokenizer_config.json").read_text()
    view = raw_reply_view(tiny_qwen3_dir, tmp_path / "view")
    assert (tiny_qwen3_dir / "tokenizer_config.json").read_text() == before
    assert (view / "model.safetensors").resolve() == (
        tiny_qwen3_dir / "model.safetensors"
    ).resolve()
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(view))
    assert tok.response_template == RAW_RESPONSE_TEMPLATE
    prefill = "<think>\n"
    prompt = "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n" + prefill
    bad = '<tool_call>\n{"name": "crop_video", "arguments": {"start_time": 1}\n</tool_call>'
    for text in (" Sweep.\n</think>\n" + bad, "No square.\n</think>\n<answer>B</answer>"):
        ids = tok(text + "<|im_end|>", add_special_tokens=False)["input_ids"]
        message = tok.parse_response(ids, prefix=prompt)
        assert reply_text(message, "stop", prefill) == text
