"""``use_vllm`` in server mode against a real vLLM server (``vllm`` marker: run from the vLLM
environment, ``scripts/vllm-env.sh``; skipped elsewhere).

The server is vLLM's OpenAI server (``vllm_tiny_server``: dev mode, ``--enable-scale-out``,
processed logprobs) on a free loopback port, CPU, float32. The trainer talks to it through
paravt's own client (``paravt.rollout.vllm_server_client``: token ids and frames in, token ids and
logprobs out) and pushes its weights by a reload from the run folder
(``paravt.rollout.weight_push``). Each test leaves the server holding the folder's weights
again: the server is shared with the eval tests of the session.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import vllm_cache_check
from gloo_ranks import run_two_ranks
from producer_pace import learner_waits_for_producer

pytestmark = pytest.mark.vllm


def _restore(client, folder) -> None:
    client.reload_weights(str(folder))


def _server_run(smoke_args, run_dir, videos, model_dir, server, *more: str):
    """The CPU smoke recipe against the test's vLLM server in server mode (token_truncate)."""
    from paravt.train.run import load_command_config

    base_url = server.base_url.removesuffix("/v1")
    return load_command_config(
        "cpu-smoke",
        smoke_args(
            run_dir, videos, f"model={model_dir}", "trainer.use_vllm=true",
            "trainer.vllm_mode=server", f"trainer.vllm_server_base_url={base_url}",
            "trainer.vllm_importance_sampling_mode=token_truncate", "trainer.save_steps=100",
            *more,
        ),
    )  # fmt: skip


def _train_moving(cfg, probe, model_dir, *, wait_ahead=False):
    """``run_training`` with the probe attached and the policy's head moved at every step's end;
    the server gets the base weights back afterwards. ``(summary, probe)``. ``wait_ahead``: each
    step but the last ends only once the rollout producer holds a finished later rollout
    (``producer_pace``)."""
    from paravt.train.run import run_training

    def attach(trainer):
        probe.attach(trainer)
        trainer.add_callback(_moving_head())
        if wait_ahead:
            trainer.add_callback(learner_waits_for_producer(trainer))

    try:
        summary = run_training(cfg, on_trainer=attach)
    finally:
        _restore(probe.trainer.vllm_generation.client, model_dir)
    return summary, probe


def _moving_head():
    """A callback that scales the policy's output layer at every step's end: a stand-in for an
    update big enough for the server's logprobs to show (the random smoke model's groups rarely
    have a reward spread)."""
    from transformers import TrainerCallback

    class MoveHead(TrainerCallback):
        def on_step_end(self, args, state, control, model=None, **kw):
            with torch.no_grad():
                model.lm_head.weight.mul_(1.5)

    return MoveHead()


def test_server_logprobs_equal_the_policy_after_a_push_and_differ_before(
    vllm_tiny_server, tiny_qwen3_dir, tmp_path
):
    """A policy whose weights moved (its output layer scaled by 4): before the push the server's
    logprobs of the fixed probe (a frame and a line of text) are not the policy's, and the start
    check refuses it as another revision; after one folder push they are, within the colocate
    tolerance — and the step's folder is the only one left."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from paravt.errors import ConfigError
    from paravt.rollout.vllm_server import (
        WeightsProbe,
        check_server,
        refuse_other_weights,
        within,
    )
    from paravt.rollout.vllm_server_client import VLLMServerClient
    from paravt.rollout.weight_push import FolderReloadPush, save_checkpoint

    base = vllm_tiny_server.base_url.removesuffix("/v1")
    client = VLLMServerClient(base)
    model = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_dir, dtype=torch.float32)
    processor = AutoProcessor.from_pretrained(tiny_qwen3_dir)
    check_server(client, str(tiny_qwen3_dir), wait_s=60)
    probe = WeightsProbe(client, processor)
    same = probe.gap(model)
    assert within(same), same  # the folder's weights on both sides
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)
    try:
        before = probe.gap(model)
        with pytest.raises(ConfigError, match=r"other weights than this run's policy: mean"):
            refuse_other_weights(probe, model, str(tiny_qwen3_dir))
        push = FolderReloadPush(
            tmp_path / "push", state_dict=model.state_dict, save=save_checkpoint(model),
            reload=client.reload_weights, server=base,
        )  # fmt: skip
        push.push(0)
        push.push(1)
        after = probe.gap(model)
    finally:
        _restore(client, tiny_qwen3_dir)
    print(f"probe |server - policy|: same {same}, before push {before}, after push {after}")
    assert not within(before) and before[0] > 10 * max(after[0], 1e-6)
    assert within(after) and after[1] < 1e-3  # float32 on both sides
    assert sorted(p.name for p in (tmp_path / "push").iterdir()) == ["step-1"]
    assert within(probe.gap(AutoModelForImageTextToText.from_pretrained(tiny_qwen3_dir)))


def test_the_bucketed_push_in_bf16_shards_is_what_the_server_holds(
    vllm_tiny_server, tiny_qwen3_dir, tmp_path
):
    """The push ``server_generation`` builds: the policy (output layer scaled by 4) handed over
    in buckets of 64 KB, cast to bfloat16 by 3 writer threads into their kept buffers, several
    safetensors shards and their index, overlapped (``push`` returns before the reload; a
    request of ``ServerGeneration`` waits for it, then its pool knows the step's folder). The
    float32 server then holds exactly the bf16-rounded
    policy: its probe logprobs are those of the policy rounded to bf16 (float32 arithmetic on
    both sides), and within the tolerance of the policy itself."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from paravt.rollout.vllm_server import ServerGeneration, WeightsProbe, within
    from paravt.rollout.vllm_server_client import VLLMServerClient
    from paravt.rollout.vllm_servers import ServerPool
    from paravt.rollout.weight_gather import gathered_buckets
    from paravt.rollout.weight_push import FolderReloadPush

    base = vllm_tiny_server.base_url.removesuffix("/v1")
    client = VLLMServerClient(base)
    model = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_dir, dtype=torch.float32)
    probe = WeightsProbe(client, AutoProcessor.from_pretrained(tiny_qwen3_dir))
    with torch.no_grad():
        model.lm_head.weight.mul_(4.0)
    rounded = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_dir, dtype=torch.float32)
    rounded.load_state_dict(
        {k: v.to(torch.bfloat16).float() for k, v in model.state_dict().items()}
    )
    pool = ServerPool([client])
    push = FolderReloadPush(
        tmp_path / "push", reload=pool.reload_weights, server=base, threads=3, overlap=True,
        buckets=lambda: gathered_buckets(
            model, dtype=torch.bfloat16, bucket_bytes=64 * 1024, keep=True, own=False
        ),
    )  # fmt: skip
    try:
        before = probe.gap(model)
        gen = ServerGeneration(pool, push)
        gen.sync_weights()
        gen.generate_one(
            probe.ids[probe.text_from :], None, max_tokens=1, temperature=1.0, top_p=1.0
        )
        gen.settle()
        landed = pool.folder
        shards = len(list((tmp_path / "push" / "step-0").glob("*.safetensors")))
        exact, close = probe.gap(rounded), probe.gap(model)
    finally:
        pool.close()
        _restore(client, tiny_qwen3_dir)
    print(f"{shards} bf16 shards; probe gap before {before}, to the bf16-rounded policy {exact}, "
          f"to the fp32 policy {close}")  # fmt: skip
    assert shards > 3 and push.pushed == [0] and landed == str(tmp_path / "push" / "step-0")
    assert not within(before) and exact[1] < 1e-3 and within(close)


def test_para_grpo_trains_against_the_vllm_server(
    vllm_tiny_server, tiny_qwen3_dir, tmp_path, shared_videos, smoke_args, train_probe
):
    """Two PARA-GRPO steps, every turn sampled by the server (each episode advancing on its own),
    parallel crop_video rounds whose frames go back to it, the weights pushed at each step. Between the steps the policy's output
    layer is moved (a stand-in for an update big enough to see): step 2's sampler logprobs are
    still the policy's, so the server sampled from the pushed weights."""
    from paravt.train.metrics import read_jsonl

    run_dir = tmp_path / "run"
    cfg = _server_run(
        smoke_args, run_dir, shared_videos, tiny_qwen3_dir, vllm_tiny_server, "trainer.max_steps=2"
    )
    summary, probe = _train_moving(cfg, train_probe(), tiny_qwen3_dir)
    assert summary["global_step"] == 2
    trainer = probe.trainer
    gen = trainer.vllm_generation
    backend = trainer._backend
    # one push a step, each checked by the probe; no lockstep: no filler prompt was ever sent
    assert backend.syncs == 2 and gen.push.pushed == [0, 1]
    assert not backend.lockstep and backend.filler_prompts == 0
    # every episode advanced on its own (engine.schedule auto): each request went alone
    assert backend.agenerate is not None and backend.alone_requests > 0 and backend.calls == 0
    assert sorted(p.name for p in (run_dir / "vllm-weights").iterdir()) == ["step-1"]
    for out, rollout in zip(probe.outputs, probe.rollouts, strict=True):
        records = rollout["records"]
        # parallel rounds: several crop calls in one turn, their frames in the next prompt
        assert any(t.n_calls >= 2 for r in records for t in r.turns)
        ok_calls = [c for r in records for c in r.calls if c.status == "ok"]
        assert ok_calls and all(c.n_frames > 0 for c in ok_calls)
        assert all(
            len(r.stream.images) > r.frames_k
            for r in records
            if any(c.status == "ok" for c in r.calls)
        )
        mask = (out["completion_mask"] * out["tool_mask"]).bool()
        sampled = out["sampling_per_token_logps"][mask]
        assert mask.any() and torch.isfinite(sampled).all() and (sampled <= 0).all()
        diff = (out["old_per_token_logps"][mask] - sampled).abs()
        assert diff.max() < 1e-3, diff.max()  # float32 on both sides
    rows = [r for r in read_jsonl(run_dir / "metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2] and all(math.isfinite(r["loss"]) for r in rows)


def test_two_trainer_ranks_share_one_vllm_server(
    vllm_tiny_server, tiny_qwen3_dir, tmp_path, shared_videos
):
    """``paravt train`` on 2 gloo ranks (DDP, torchrun) against the one real server, as the
    reference lays it out (one inference server beside the trainers): each rank sends its own
    requests, every episode on its own, with no lockstep (no handshake, no filler prompt); the
    ranks meet only at the folder push, once a step, and both sample from the pushed weights
    (each rank's sampler logprobs are its policy's within 1e-3 at both steps)."""
    from paravt.rollout.vllm_server_client import VLLMServerClient

    base = vllm_tiny_server.base_url.removesuffix("/v1")
    worker = Path(__file__).with_name("vllm_server_ranks_worker.py")
    try:
        done = run_two_ranks(
            worker, str(tiny_qwen3_dir), str(shared_videos), base, str(tmp_path), timeout=480
        )
    finally:
        _restore(VLLMServerClient(base), tiny_qwen3_dir)
    assert done.returncode == 0, done.stderr[-4000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    for r in ranks:
        print(f"rank {r['rank']}: {len(r['sent'])} requests, {r['alone']} alone, gaps {r['gaps']}")
        assert r["world"] == 2 and r["global_step"] == 2
        assert r["syncs"] == 2 and r["pushed"] == [0, 1]
        assert not r["lockstep"] and r["fillers"] == 0 and r["rounds_calls"] == 0
        assert r["alone"] > 0 and r["sent"]
        assert len(r["gaps"]) == 2 and all(g is not None and g < 1e-3 for g in r["gaps"])
    assert sorted(p.name for p in (tmp_path / "run" / "vllm-weights").iterdir()) == ["step-1"]


def test_server_serves_round_two_from_its_prefix_cache(
    vllm_tiny_server, tiny_qwen3_dir, tmp_path, video_path
):
    """A two-round episode through paravt's client (round 1 sampled by the server, a crop's frames,
    the forced answer): round 2's ``usage.prompt_tokens_details.cached_tokens``
    (``--enable-prompt-tokens-details``) is every full KV block round 1 computed — at least its
    whole prompt — and it is the turn's ``cached_tokens`` in the episode record. Each overview
    frame went in both rounds under the same content hash (its ``uuid``), first and in order;
    a frame that hashed otherwise in round 2 would have ended the cache hit at its first block."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend
    from paravt.rollout.vllm_server import ServerGeneration
    from paravt.rollout.vllm_server_client import VLLMServerClient
    from paravt.rollout.weight_push import FolderReloadPush, save_checkpoint

    base = vllm_tiny_server.base_url.removesuffix("/v1")
    client = VLLMServerClient(base)
    block = int(client.server_info()["cache_config"]["block_size"])
    hashes: list[list[str]] = []
    send = client.generate

    def recording(token_ids, images, sampling, *, what=""):
        hashes.append([digest for _, digest in images])
        return send(token_ids, images, sampling, what=what)

    client.generate = recording
    model = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_dir, dtype=torch.float32)
    processor = AutoProcessor.from_pretrained(tiny_qwen3_dir)
    # the folder's own weights: the reload also empties the prefix cache other tests filled
    push = FolderReloadPush(
        tmp_path / "push", state_dict=model.state_dict, save=save_checkpoint(model),
        reload=client.reload_weights, server=base,
    )  # fmt: skip
    backend = VLLMBackend(ServerGeneration(client, push), processor)
    sampling = vllm_cache_check.sampling_kwargs(block, vllm_cache_check.markup_ids(processor))
    backend.generator.generation_kwargs.update(sampling)
    budget = {"min_pixels": 4096, "max_pixels": 8192}
    engine = EpisodeEngine(backend, vllm_cache_check.engine_config(block, budget))
    video = str(video_path("torchcodec__testsrc2.mp4"))
    with backend.rollout(0):
        (record,) = engine.run([vllm_cache_check.episode(video, "server-cache")])
    rounds = vllm_cache_check.check_round_two_hits(record, block)
    print(f"server, block {block}: {rounds}")
    vllm_cache_check.check_same_frame_hashes(hashes)


def test_para_grpo_at_max_staleness_2_learns_from_rollouts_one_version_back(
    vllm_tiny_server, tiny_qwen3_dir, tmp_path, shared_videos, smoke_args, train_probe
):
    """Bounded staleness against the real server: 4 PARA-GRPO steps at ``max_staleness = 2``,
    every turn sampled by the server while the trainer learns (the producer runs up to 2 steps
    ahead; each step ends only once it holds a finished later rollout), crop_video frames going
    back to it, one weight push a step with each turn recording the version that sampled it. The
    steps consume at least one group sampled one version back or more, none more than 2; the
    sampler's logprobs of a stale turn are its own version's, so they differ from the learner's
    old log-probs, and the per-token weight corrects for it. (The policy's output layer is moved
    at every step's end, a stand-in for an update big enough to see: the random smoke model's
    groups rarely have a reward spread.)"""
    from paravt.train.metrics import read_jsonl

    run_dir = tmp_path / "run"
    cfg = _server_run(
        smoke_args, run_dir, shared_videos, tiny_qwen3_dir, vllm_tiny_server,
        "trainer.max_steps=4", "trainer.max_staleness=2",
    )  # fmt: skip
    summary, probe = _train_moving(cfg, train_probe(), tiny_qwen3_dir, wait_ahead=True)
    assert summary["global_step"] == 4
    trainer = probe.trainer
    assert trainer._backend.syncs == 4 and trainer.vllm_generation.push.pushed == [0, 1, 2, 3]
    rows = [r for r in read_jsonl(run_dir / "metrics.jsonl") if "loss" in r]
    ages = [r["async/staleness_max"] for r in rows]
    print(f"staleness per step: {ages}; waits {[round(r['async/wait_s'], 2) for r in rows]}")
    assert max(ages) >= 1 and max(ages) <= 2 and all(r["async/groups_dropped"] == 0 for r in rows)
    stale_gaps = []
    for step, (out, rollout) in enumerate(zip(probe.outputs, probe.rollouts, strict=True)):
        for g in rollout["groups"]:
            assert all(0 <= step - v <= 2 for v in g.policy_versions)
        records = rollout["records"]
        ok_calls = [c for r in records for c in r.calls if c.status == "ok"]
        assert ok_calls and all(c.n_frames > 0 for c in ok_calls)
        mask = (out["completion_mask"] * out["tool_mask"]).bool()
        diff = (out["old_per_token_logps"][mask] - out["sampling_per_token_logps"][mask]).abs()
        versions = [min(v for v in (t.policy_version for t in r.turns) if v is not None)
                    for r in records if r.status == "ok"]  # fmt: skip
        if step and min(versions) < step:
            stale_gaps.append(float(diff.max()))
        else:
            assert diff.max() < 1e-3, diff.max()  # sampled by the weights it learns with
    # at least one step learned from tokens of older weights, and saw the difference
    assert stale_gaps and max(stale_gaps) > 1e-3, stale_gaps
