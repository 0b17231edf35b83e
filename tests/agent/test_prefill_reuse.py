"""Prefill once per episode (``engine.reuse_cache``): the hf backend keeps each episode's KV cache
and image features between its turns, and that changes nothing but the work done.

Every test runs the same episodes twice through the real engine and a real model (fp32, greedy):
once with reuse off (every turn a full prefill through ``model.generate``) and once with it on
(``backends.cached_decode``), in one batch of episodes of different lengths, and compares token
ids, text and logprobs. With random weights the tool calls come from a pre-filled prefix, as in
test_hf_backend.py, so every episode runs its full number of tool rounds.
"""

from __future__ import annotations

import dataclasses
import logging

import pytest
import torch
from agent_helpers import call, small_config

from paravt.agent.engine import EpisodeEngine
from paravt.backends.hf import HFBackend
from paravt.schema.episodes import EpisodeInput, GenRequest, TokenPrompt

PREFIX = "<think>look</think>" + call(0, 3)


def _inputs(pancake, bunny) -> list[EpisodeInput]:
    """Three episodes of different prompt lengths (videos, K, questions, option counts)."""
    return [
        EpisodeInput("p", pancake, "What happens?", ["A cat", "A pan"]),
        EpisodeInput("b", bunny, "What animal is it?", ["A rabbit", "A dog"], frames_k=2),
        EpisodeInput("q", pancake, "Which tool is used, and when?", ["A", "B", "C"], frames_k=3),
    ]


def _run(backend, cfg, inputs, reuse: bool):
    return EpisodeEngine(backend, dataclasses.replace(cfg, reuse_cache=reuse)).run(inputs)


def assert_same_episodes(full, reused, tol: float = 1e-5) -> None:
    """Greedy reuse reproduces full prefill: the same ids and text, logprobs within ``tol``."""
    assert len(full) == len(reused)
    for a, b in zip(full, reused, strict=True):
        assert (a.id, a.status, a.error) == (b.id, b.status, b.error)
        assert a.stream.token_ids == b.stream.token_ids, a.id
        assert [t.text for t in a.turns] == [t.text for t in b.turns]
        assert a.prediction == b.prediction
        diff = (torch.tensor(a.stream.logprobs) - torch.tensor(b.stream.logprobs)).abs().max()
        assert diff <= tol, (a.id, float(diff))


def prefilled(rec) -> int:
    return sum(t.prompt_tokens - t.cached_tokens for t in rec.turns)


@pytest.fixture(scope="module")
def q3(tiny_qwen3_dir):
    backend = HFBackend.from_pretrained(str(tiny_qwen3_dir), device="cpu", batch_size=4)
    backend.logprobs = True
    return backend


@pytest.fixture(scope="module")
def q25(tiny_qwen25_dir):
    backend = HFBackend.from_pretrained(str(tiny_qwen25_dir), device="cpu", batch_size=4)
    backend.logprobs = True
    return backend


@pytest.mark.parametrize("rounds", [2, 3])
@pytest.mark.parametrize("arch", ["q3", "q25"])
def test_reuse_reproduces_full_prefill_and_prefills_each_token_once(
    arch, rounds, request, pancake, bunny
):
    backend = request.getfixturevalue(arch)
    cfg = small_config(max_turns=rounds, max_new_tokens=6, forced_tokens_mcq=4, think_prefix=PREFIX)
    inputs = _inputs(pancake, bunny)
    full = _run(backend, cfg, inputs, reuse=False)
    assert backend.states is None
    reused = _run(backend, cfg, inputs, reuse=True)
    assert_same_episodes(full, reused)
    stats = backend.states.stats
    assert stats.misses == len(inputs) and stats.hits == len(inputs) * rounds
    assert stats.over_budget == 0
    for a, b in zip(full, reused, strict=True):
        assert len(b.turns) == rounds + 1 and b.turns[-1].forced
        # every turn after the first continued the whole previous context
        for prev, turn in zip(b.turns, b.turns[1:], strict=False):
            assert turn.cached_tokens == prev.prompt_tokens + prev.generated_tokens - 1
        # full prefill: the sum of every turn's prompt; reuse: the final prompt, less the
        # generated tokens the decode loop already put in the cache
        final = b.turns[-1].prompt_tokens
        decoded = sum(t.generated_tokens - 1 for t in b.turns[:-1])
        assert prefilled(a) == sum(t.prompt_tokens for t in a.turns)
        assert prefilled(b) == final - decoded
    # each frame through the vision tower once: K overview frames, and every round's window
    # (the same window of one video in one round is one set of images, whoever asked for it)
    overview = sum(k for _, k in {(r.video, r.frames_k) for r in reused})
    window = sum({r.video: r.calls[0].n_frames for r in reused}.values())
    assert stats.encoded_images == overview + rounds * window
    # the episodes ended: nothing is kept
    assert len(backend.states) == 0 and backend.states.used_bytes == 0


class _FailingBackend(HFBackend):
    """The hf backend with one episode's request failing at one turn (a planning error: the
    backend's per-request step), to check that only that episode stops."""

    fail_key = ""
    fail_turn = 1

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.kept_after_failure: list[bool] = []

    def _plan(self, req: GenRequest):
        if req.episode_id == self.fail_key and req.turn == self.fail_turn:
            raise RuntimeError("injected failure")
        if req.turn > self.fail_turn:  # later turns: the failed episode holds nothing
            self.kept_after_failure.append(
                any(k.endswith(f":{self.fail_key}") for k in self.states.episodes())
            )
        return super()._plan(req)


def test_an_episode_that_fails_mid_batch_drops_only_its_own_state(
    tiny_qwen3_dir, q3, pancake, bunny
):
    cfg = small_config(max_turns=3, max_new_tokens=6, forced_tokens_mcq=4, think_prefix=PREFIX)
    inputs = _inputs(pancake, bunny)
    full = _run(q3, cfg, inputs, reuse=False)
    backend = _FailingBackend.from_pretrained(str(tiny_qwen3_dir), device="cpu", batch_size=4)
    backend.logprobs = True
    backend.fail_key = "b"
    reused = _run(backend, cfg, inputs, reuse=True)
    by_id = {r.id: r for r in reused}
    failed = by_id["b"]
    assert failed.status == "error" and "generation failed at turn 1" in failed.error
    assert "injected failure" in failed.error and len(failed.turns) == 1
    assert backend.kept_after_failure and not any(backend.kept_after_failure)
    others = [r for r in full if r.id != "b"]
    assert_same_episodes(others, [by_id[r.id] for r in others])
    assert len(backend.states) == 0


def test_past_the_budget_a_turn_prefills_in_full_and_says_so(q3, pancake, bunny, caplog):
    # the tiny model's KV cache is ~0.5 kB a token: 1 MiB holds one episode's state, not three
    cfg = small_config(
        max_turns=2, max_new_tokens=6, forced_tokens_mcq=4, think_prefix=PREFIX, reuse_cache_mb=1
    )
    inputs = _inputs(pancake, bunny)
    full = _run(q3, cfg, inputs, reuse=False)
    with caplog.at_level(logging.INFO, logger="paravt.backends.episode_state"):
        reused = _run(q3, cfg, inputs, reuse=True)
    assert_same_episodes(full, reused)
    stats = q3.states.stats
    assert stats.over_budget > 0 and stats.hits > 0  # some states kept, some not
    assert "prefills in full" in caplog.text and "engine.reuse_cache_mb" in caplog.text
    assert any(t.cached_tokens == 0 for r in reused for t in r.turns[1:])
    assert len(q3.states) == 0


def test_a_state_that_is_not_a_prefix_of_the_next_prompt_is_not_used(q3, pancake):
    """Kept states are matched on ids and images: a different prompt under the same key is a
    full prefill (never the wrong cache)."""
    cfg = small_config(max_turns=1, max_new_tokens=4, forced_tokens_mcq=3, think_prefix=PREFIX)
    [rec] = _run(q3, cfg, [EpisodeInput("p", pancake, "What?", ["x", "y"])], reuse=True)
    q3.keep_episode_state(2**20)
    ids = rec.stream.token_ids[: rec.turns[0].prompt_tokens]
    images = rec.stream.images[: rec.frames_k]

    def ask(prompt):
        req = GenRequest("p", 0, "main", [], images, 3, tokens=TokenPrompt(prompt), continues=True)
        req.state_key = "k"
        return q3.generate([req])[0]

    first = ask(ids)
    assert first.cached_tokens == 0 and q3.states.has_state("k")
    changed = list(ids)
    changed[3] = changed[4]  # same length, one token different
    again = ask(changed + first.token_ids)
    assert again.error is None and again.cached_tokens == 0
    cont = ask(changed + first.token_ids + again.token_ids)
    assert cont.cached_tokens == len(changed) + len(first.token_ids) + len(again.token_ids) - 1
    q3.end_episodes(["k"])
    assert len(q3.states) == 0


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The shipped demo model with its settings, and toy videos of two lengths (150 s, 180 s)."""
    from paravt.agent.config import InferConfig
    from paravt.config import load_config
    from paravt.data.rows import read_rows
    from paravt.toy.demo import DEMO_MODEL, with_demo_defaults
    from paravt.toy.generate import make_toy_task
    from paravt.toy.task import ToyTaskConfig

    cfg = load_config(InferConfig, base=with_demo_defaults({"backend": {"model": DEMO_MODEL}}))
    backend = HFBackend.from_config(cfg.backend)
    backend.logprobs = True
    rows = {}
    for seed in (1, 2):
        out = tmp_path_factory.mktemp(f"toy{seed}")
        make_toy_task(ToyTaskConfig(out=str(out), n=1, seed=seed, visibility_videos=0))
        [rows[seed]] = [
            r for r in read_rows(out / "train.jsonl", out).rows if r.question_type == "mcq"
        ]
    inputs = [
        EpisodeInput(f"s{s}k{k}", rows[s].video, rows[s].question, rows[s].options, frames_k=k)
        for s, k in ((1, 4), (2, 8), (1, 6))
    ]
    return backend, cfg.engine, inputs


@pytest.mark.parametrize("rounds", [2, 3])
def test_the_demo_model_answers_the_same_with_reuse(demo, rounds):
    """A call pre-filled in every turn, so the episodes run up to ``rounds`` tool rounds (the
    model may still close a turn without one: at 3 rounds one of these episodes answers after
    2 here, so the batch shrinks between rounds)."""
    backend, engine, inputs = demo
    prefix = "<think>\nlook</think>\n" + call(0, 60)
    cfg = dataclasses.replace(engine, max_turns=rounds, max_new_tokens=24, think_prefix=prefix)
    full = _run(backend, cfg, inputs, reuse=False)
    reused = _run(backend, cfg, inputs, reuse=True)
    assert all(r.status == "ok" for r in reused), [r.error for r in reused]
    assert_same_episodes(full, reused)
    assert max(len(r.turns) for r in reused) == rounds + 1
    assert all(prefilled(b) < prefilled(a) for a, b in zip(full, reused, strict=True))
    assert backend.states.stats.hits > 0 and len(backend.states) == 0
