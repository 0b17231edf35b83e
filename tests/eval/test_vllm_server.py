"""The ``openai`` backend against a real vLLM server (``vllm`` marker: run from the vLLM
environment, ``scripts/vllm-env.sh``; skipped elsewhere).

Each server is vLLM's own OpenAI server on a free loopback port, CPU, float32, started once per
module by the test and always shut down (``VLLMServe``):

- at temperature 0, ``hf`` (in process) and ``openai`` (over HTTP to vLLM) give the same answers
  and the same final turns on toy questions, with real tool turns — a pre-filled sweep of two
  parallel ``crop_video`` calls whose frames go back to the model, then the forced answer — on the
  tiny random Qwen3-VL and on a tiny model around the real Qwen3-VL tokenizer and template;
- the same with the shipped toy demo model deciding its own five parallel calls;
- a server that cannot run the episodes as configured fails at start with one line: nothing
  answers, another model name, a pixel budget its processor would re-size.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from paravt.agent.config import BackendConfig, CropSettings, EngineConfig
from paravt.eval.agreement import ServeSettings, VLLMServe, free_port, run_agreement
from paravt.eval.config import EvalConfig
from paravt.eval.results import read_results

pytestmark = pytest.mark.vllm

#: the toy experiment's frames: 32x32, one vision token each
PIXELS = 1024
#: the sweep every episode starts with: two windows in one turn, the answer forced after them
SWEEP = (
    "<think>\nCheck two windows.\n</think>\n"
    '<tool_call>\n{"name": "crop_video", "arguments": {"video_path": "v", "start_time": 0, '
    '"end_time": 20}}\n</tool_call>\n'
    '<tool_call>\n{"name": "crop_video", "arguments": {"video_path": "v", "start_time": 40, '
    '"end_time": 60}}\n</tool_call>'
)
SETTINGS = ServeSettings(server="vllm", threads=1, startup_timeout_s=900, max_model_len=8192)


def _engine(**kw) -> EngineConfig:
    """Short turns: a random model's logits are nearly flat, so after ~10 greedy tokens two
    correct implementations part on a near tie (measured at 24/64-token turns: 18 of 20 answers
    and none of the final turns alike; at 8 tokens: all of them)."""
    crop = CropSettings(max_frames=4, min_pixels=PIXELS, max_pixels=PIXELS)
    base = {"frames": 4, "min_pixels": PIXELS, "max_pixels": PIXELS, "think_prefix": SWEEP,
            "max_turns": 1, "max_new_tokens": 8, "forced_tokens_mcq": 8, "temperature": 0.0,
            "crop": crop}  # fmt: skip
    return EngineConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def toy_split(tmp_path_factory):
    """Twenty toy-task mcq questions (the real generator)."""
    from paravt.toy.generate import make_toy_task
    from paravt.toy.task import ToyTaskConfig

    out = tmp_path_factory.mktemp("toy")
    make_toy_task(
        ToyTaskConfig(out=str(out), n=20, seed=11, split="eval", visibility_videos=0,
                      question_types=["mcq"])
    )  # fmt: skip
    return out


def _agree(model_dir, split, out, server) -> dict:
    cfg = EvalConfig(
        benchmark="jsonl", data=str(split), videos=str(split), out=str(out),
        backend=BackendConfig(model=str(model_dir)), engine=_engine(),
    )  # fmt: skip
    report = run_agreement(cfg, SETTINGS, server=server)
    (out / "report.txt").write_text(json.dumps({k: report[k] for k in ("n", "same")}))
    return report


def _check_report(report: dict, out) -> None:
    assert report["n"] == 20 and report["agreement"] >= 0.95, report["disagreements"]
    assert report["headline"]["openai"]["errors"] == 0, report["headline"]
    rows = {side: read_results(out / side / "results.jsonl") for side in ("hf", "openai")}
    for side in rows:  # real tool turns: both windows ran and returned frames, then the answer
        for r in rows[side]:
            assert r.tools.executed == 2 and r.tools.turns == 2, (side, r.id, r)
            assert r.forced, (side, r.id)
    # vLLM holds back the bytes of a UTF-8 character a reply stops inside; hf decodes them as
    # U+FFFD (a random model stops inside one often)
    finals = {s: {r.id: r.prediction.rstrip("\ufffd") for r in rows[s]} for s in rows}
    same = sum(finals["hf"][i] == finals["openai"].get(i) for i in finals["hf"])
    assert same >= 19, [(i, finals["hf"][i], finals["openai"].get(i)) for i in finals["hf"]]


def test_hf_and_vllm_answer_alike_on_the_tiny_model(
    tiny_qwen3_dir, toy_split, vllm_tiny_server, tmp_path
):
    out = tmp_path / "agree"
    _check_report(_agree(tiny_qwen3_dir, toy_split, out, vllm_tiny_server), out)


def test_hf_and_vllm_answer_alike_around_the_real_qwen3_vl_tokenizer(
    real_tiny_dir, toy_split, tmp_path_factory, tmp_path
):
    model = real_tiny_dir("qwen3-vl-instruct")
    log = tmp_path_factory.mktemp("vllm-real") / "serve.log"
    # Qwen3-VL's processor raises every image to 65 536 pixels: the server is told the frames'
    # range, as docs/train/VLLM.md says (without it the start check refuses: 64 vision tokens, not 1)
    size = '{"size": {"shortest_edge": 1024, "longest_edge": 1048576}}'
    settings = dataclasses.replace(SETTINGS, extra_args=("--mm-processor-kwargs", size))
    with VLLMServe(str(model), settings, str(log)) as server:
        out = tmp_path / "agree"
        _check_report(_agree(model, toy_split, out, server), out)


def test_hf_and_vllm_agree_on_the_shipped_demo_model(toy_split, tmp_path_factory, tmp_path):
    """A trained model that writes its own parallel calls (the random models above only continue
    a pre-filled sweep), at its own settings: greedy ~300-token first turns, five windows, the
    answer. The toy tokenizer marks ``<tool_call>`` and ``</think>`` special, which vLLM strips
    from the reply unless the request says ``skip_special_tokens: false``: before the backend
    said so, every vLLM episode ended after one turn with no call (0 of 60 right, hf 40)."""
    from paravt.config import load_config
    from paravt.toy.demo import DEMO_MODEL, with_demo_defaults

    flags = {"benchmark": "jsonl", "data": str(toy_split), "videos": str(toy_split),
             "out": str(tmp_path / "agree"), "backend": {"model": DEMO_MODEL, "dtype": "float32"},
             "engine": {"temperature": 0.0}}  # fmt: skip
    cfg = load_config(EvalConfig, base=with_demo_defaults(flags))
    log = tmp_path_factory.mktemp("vllm-demo") / "serve.log"
    with VLLMServe(cfg.backend.model, SETTINGS, str(log)) as server:
        report = run_agreement(cfg, SETTINGS, server=server)
    assert report["agreement"] >= 0.95, report["disagreements"]
    for side in ("hf", "openai"):
        head = report["headline"][side]
        assert head["errors"] == 0, head
        # every episode swept: five windows in its first turn, all of them run
        assert head["tools"]["avg_calls"] == 5.0 and head["tools"]["usage_rate"] == 1.0, head


# -- start failures: one line, before any episode ----------------------------------------------
def _infer(paravt_cli, video, *sets):
    return paravt_cli(
        "infer", str(video), "-q", "Which colour?", "--option", "red", "--option", "blue",
        "--backend", "openai", *[a for s in sets for a in ("--set", s)],
    )  # fmt: skip


def _one_line(r, *words):
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_a_server_that_cannot_run_the_episodes_fails_at_start(
    vllm_tiny_server, tiny_qwen3_dir, toy_split, paravt_cli
):
    video = next(toy_split.glob("**/*.mp4"))
    good = (f"backend.base_url={vllm_tiny_server.base_url}", f"backend.model={vllm_tiny_server.served_model}",
            f"engine.min_pixels={PIXELS}", f"engine.max_pixels={PIXELS}",
            f"engine.crop.min_pixels={PIXELS}", f"engine.crop.max_pixels={PIXELS}",
            "engine.max_new_tokens=4")  # fmt: skip
    nobody = f"backend.base_url=http://127.0.0.1:{free_port()}/v1"
    _one_line(_infer(paravt_cli, video, *good, nobody), "no server answers", "backend.base_url")
    other = "backend.model=someone-else"
    _one_line(
        _infer(paravt_cli, video, *good, other),
        "'someone-else' is not served",
        vllm_tiny_server.served_model,
    )
    # the tiny processor resizes images into [1024, 65536] pixels: a 200k-pixel crop budget would
    # reach vLLM as frames it shrinks
    big = ("engine.crop.min_pixels=150000", "engine.crop.max_pixels=200000")
    _one_line(
        _infer(paravt_cli, video, *good, *big), "engine.crop.min_pixels/max_pixels", "vision tokens"
    )
    ok = _infer(paravt_cli, video, *good)
    assert ok.returncode == 0, ok.stderr
