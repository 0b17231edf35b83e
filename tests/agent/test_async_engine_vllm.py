"""vLLM's in-process async engine (``AsyncVLLMBackend``) under both schedules: the episodes that
advance on their own write the records of the synchronous rounds, token for token (``vllm``
marker: run from the vLLM environment, ``scripts/vllm-env.sh``; skipped elsewhere).

The model is the shipped demo model at its own settings, greedy: it decides its own five parallel
``crop_video`` calls (~300-token first turns), the windows' frames go back to it, it answers.
Real toy-task videos, real tools, a real ``AsyncLLM`` (vllm-cpu, float32, engine core in a
process of its own).
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from agent_helpers import record_view

from paravt.agent.engine import EpisodeEngine
from paravt.schema.episodes import EpisodeInput

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def demo_engine_config():
    from paravt.agent.config import EngineConfig
    from paravt.config import load_config
    from paravt.toy.demo import demo_card
    from paravt.toy.prompts import toy_system_prompt

    engine = {**demo_card()["engine"], "system_prompt": str(toy_system_prompt("parallel"))}
    return load_config(EngineConfig, base={**engine, "temperature": 0.0})


@pytest.fixture(scope="module")
def toy_inputs(tmp_path_factory):
    from paravt.data.rows import read_rows
    from paravt.toy.generate import make_toy_task
    from paravt.toy.task import ToyTaskConfig

    out = tmp_path_factory.mktemp("toy")
    make_toy_task(ToyTaskConfig(out=str(out), n=8, seed=3, split="eval", visibility_videos=0,
                                question_types=["mcq"]))  # fmt: skip
    rows = read_rows(out / "eval.jsonl", out).rows[:8]
    return [EpisodeInput(r.id, r.video, r.question, r.options, r.question_type) for r in rows]


@pytest.fixture(scope="module")
def demo_vllm():
    pytest.importorskip("vllm")
    from paravt.rollout.vllm_async import AsyncVLLMBackend
    from paravt.toy.demo import demo_model_dir

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB; vLLM's CPU default is 4
        args = {"model": str(demo_model_dir()), "dtype": "float32", "max_model_len": 4096,
                "enforce_eager": True, "seed": 0}  # fmt: skip
        with AsyncVLLMBackend(args) as backend:
            yield backend


def _split_logprobs(rec) -> tuple[dict, list[float]]:
    view = record_view(rec)
    return view, view.pop("logprobs")


def test_async_vllm_episodes_equal_the_rounds_token_for_token(
    demo_vllm, demo_engine_config, toy_inputs
):
    rounds = dataclasses.replace(demo_engine_config, schedule="rounds")
    engine = EpisodeEngine(demo_vllm, rounds)
    assert not engine.episodes_advance_alone()
    calls_before = demo_vllm.calls
    want = engine.run(toy_inputs)
    n_rounds = demo_vllm.calls - calls_before  # one generate() call a round
    assert 2 <= n_rounds <= engine.max_rounds
    alone = EpisodeEngine(demo_vllm, demo_engine_config)  # auto: agenerate -> on their own
    assert alone.episodes_advance_alone()
    got = alone.run(toy_inputs)
    assert demo_vllm.calls - calls_before == n_rounds  # nothing went through generate()
    for w, g in zip(want, got, strict=True):
        assert w.status == g.status == "ok", (w.error, g.error)
        # the demo model sweeps: five windows in its first turn, all run, then it answers
        assert g.tool_counts.executed_ok == 5 and len(g.turns) >= 2, g.to_dict()
        (wv, wl), (gv, gl) = _split_logprobs(w), _split_logprobs(g)
        assert gv == wv, g.id  # texts, calls, messages, token ids, mask, images
        # vLLM's logprob of each sampled token: the same up to the float sums of another batch
        assert len(gl) == len(wl)
        assert all(math.isclose(a, b, abs_tol=1e-3) for a, b in zip(gl, wl, strict=True)), g.id
