"""Colocated vLLM's dtype and seed: the learner's dtype and the trainer's seed, resolved in the
config the run folder records, and handed to the ``vllm.LLM`` that TRL builds.

Why: TRL's colocated ``LLM(...)`` passed no dtype (vLLM on CPU sampled the fp32 policy in bf16)
and seeded every engine with the process index (runs of different seeds shared one sampling
stream). The real engine's dtype and seed are checked in the vLLM environment
(``tests/train/test_vllm_colocate.py``); here the resolution and the hand-over, with no vLLM.
"""

from __future__ import annotations

import json

import pytest

from paravt.errors import ConfigError
from paravt.rollout.vllm import colocated_llm_settings
from paravt.train.run import load_command_config, para_config, start_run_folder


def _args(*sets: str):
    return para_config(load_command_config("cpu-smoke", sets))


def test_the_defaults_are_the_learners_dtype_and_the_trainers_seed(tmp_path):
    args = _args("trainer.seed=7")
    assert args.bf16 is False  # the CPU recipe trains in fp32 ...
    assert args.vllm_dtype == "float32"  # ... so vLLM samples in fp32
    assert args.vllm_seed == 7
    assert _args("trainer.bf16=true").vllm_dtype == "bfloat16"
    assert _args("trainer.seed=3").vllm_seed == 3  # another seed, another stream
    # what a recipe says wins
    assert _args("trainer.vllm_dtype=auto", "trainer.vllm_seed=11").vllm_seed == 11
    assert _args("trainer.vllm_dtype=auto").vllm_dtype == "auto"
    with pytest.raises(ConfigError, match="vllm_dtype='fp8'"):
        _args("trainer.vllm_dtype=fp8")
    # the run folder records the resolved values
    start_run_folder(tmp_path, {"recipe": "cpu-smoke"}, args, None, tmp_path / "metrics.jsonl")
    resolved = json.loads((tmp_path / "config.json").read_text())["trainer_resolved"]
    assert (resolved["vllm_dtype"], resolved["vllm_seed"]) == ("float32", 7)


def test_the_llm_trl_builds_gets_them(monkeypatch):
    from trl.generation import vllm_generation

    built = []

    def fake_llm(*args, **kwargs):  # stands in for vllm.LLM: records what TRL would build
        built.append(kwargs)
        return "llm"

    monkeypatch.setattr(vllm_generation, "LLM", fake_llm, raising=False)
    with colocated_llm_settings("float32", 7):
        # TRL's call: no dtype, the process index over the tensor-parallel size as the seed
        assert vllm_generation.LLM(model="m", seed=0) == "llm"
        vllm_generation.LLM(model="m", seed=1)  # rank 1: its own stream
    assert built == [
        {"model": "m", "seed": 7, "dtype": "float32"},
        {"model": "m", "seed": 8, "dtype": "float32"},
    ]
    assert vllm_generation.LLM is fake_llm  # put back
