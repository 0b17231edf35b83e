"""The shipped demo model (``--model toy-demo``) on generated toy videos: with nothing written
into its turns but ``<think>\\n``, it decides its own ``crop_video`` calls, the engine runs them
in parallel, and the answers are right. The same settings ``paravt infer`` resolves."""

from __future__ import annotations

import pytest

from paravt.agent.config import InferConfig
from paravt.agent.engine import EpisodeEngine
from paravt.agent.records import EpisodeInput
from paravt.backends.factory import make_backend
from paravt.config import load_config
from paravt.data.rows import read_rows
from paravt.toy.demo import DEMO_MODEL, demo_card, demo_model_dir, with_demo_defaults
from paravt.toy.generate import make_toy_task
from paravt.toy.oracle import episode_reward
from paravt.toy.prompts import toy_system_prompt
from paravt.toy.task import ToyTaskConfig


def _demo_config(**engine) -> InferConfig:
    flags = {"backend": {"model": DEMO_MODEL}, **({"engine": engine} if engine else {})}
    return load_config(InferConfig, base=with_demo_defaults(flags))


def test_the_alias_names_the_packaged_folder_and_its_training_settings():
    cfg = _demo_config()
    assert cfg.backend.model == str(demo_model_dir())
    assert cfg.engine.system_prompt == str(toy_system_prompt("parallel"))
    assert cfg.engine.think_prefix == "<think>\n"  # no calls pre-filled: the model writes them
    assert cfg.engine.frames == 4 and cfg.engine.max_pixels == 1024
    assert demo_card()["engine"]["crop"]["max_frames"] == 16
    # what the flags give wins over the card; other models are left alone
    direct = _demo_config(mode="direct", frames=8)
    assert direct.engine.frames == 8
    assert direct.engine.system_prompt == str(toy_system_prompt("direct"))
    other = {"backend": {"model": "some/model"}}
    assert with_demo_defaults(other) is other


#: An unpicked range: one video each of ``make-toy-task --n 1 --seed S`` for S = 0..19, every
#: seed, misses included. Measured (fp16 demo built at 2 threads, greedy, this engine, 4 Dec
#: 2026): 20 of 20 right; seeds 20-39 gave 19 of 20; the toy eval split 59 of 60
#: (experiments/toy_paradox/results/demo-eval/). The bar, 16 of 20 (80%), sits 4 below the
#: measurement and far above chance (25%, 5 of 20): it fails when the demo stops reading the
#: colour, not when one decision token flips.
SEEDS = range(20)
MIN_RIGHT = 16


def test_the_demo_model_sweeps_in_parallel_and_answers_most_seeds_right(tmp_path):
    inputs = []
    for seed in SEEDS:
        out = tmp_path / f"s{seed}"
        make_toy_task(ToyTaskConfig(out=str(out), n=1, seed=seed, visibility_videos=0))
        [r] = [r for r in read_rows(out / "train.jsonl", out).rows if r.question_type == "mcq"]
        inputs.append(
            EpisodeInput(f"s{seed}", r.video, r.question, r.options, "mcq", None, r.answer)
        )
    cfg = _demo_config()
    records = EpisodeEngine(make_backend(cfg.backend), cfg.engine).run(inputs)
    right = []
    for rec in records:
        # every episode, right or wrong: one turn of several windows, then a tagged answer
        assert rec.status == "ok", rec.error
        first = [c for c in rec.calls if c.turn == 0 and c.status == "ok"]
        assert len(first) >= 2, (rec.id, rec.turns[0].text)
        assert rec.answer_source == "answer_tag", (rec.id, rec.prediction)
        if episode_reward(rec).acc == pytest.approx(1.0):
            right.append(rec.id)
    assert len(right) >= MIN_RIGHT, (len(right), right)
