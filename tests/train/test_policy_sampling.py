"""The in-process policy sampler uses the trainer's sampling settings, not the model folder's."""

from __future__ import annotations

import torch

from paravt.rollout.policy import PolicyBackend
from paravt.schema.episodes import GenRequest, TokenPrompt


def _requests(ids: list[int], n: int) -> list[GenRequest]:
    return [
        GenRequest(
            episode_id=f"e{i}",
            turn=1,
            role="main",
            messages=[],
            images=[],
            max_new_tokens=8,
            temperature=1.0,
            tokens=TokenPrompt(list(ids)),
        )
        for i in range(n)
    ]


def test_top_k_zero_turns_top_k_off_even_when_the_model_config_sets_one(tiny_qwen3_dir):
    """TRL's ``top_k=0`` means no top-k, whatever the model folder's generation_config says
    (Qwen ships top_k=20; here 1, i.e. greedy): GRPO must sample what the trainer asked for."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_dir, dtype=torch.float32).eval()
    processor = AutoProcessor.from_pretrained(tiny_qwen3_dir)
    model.generation_config.top_k = 1
    ids = processor.tokenizer(
        "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n"
    ).input_ids
    torch.manual_seed(0)
    sampled = PolicyBackend(model, processor, temperature=1.0, top_k=0).generate(_requests(ids, 6))
    assert len({tuple(g.token_ids) for g in sampled}) > 1
    torch.manual_seed(0)
    top1 = PolicyBackend(model, processor, temperature=1.0, top_k=1).generate(_requests(ids, 6))
    assert len({tuple(g.token_ids) for g in top1}) == 1  # the setting itself is honoured


def test_lockstep_samples_what_the_other_rank_samples_and_drops_the_fillers(tiny_qwen3_dir):
    """One rank of two, the other one scripted through the gather: this rank's call also samples
    the other rank's budget group (a filler batch with a filler image, since that group has
    images), pads its own group's second batch with a filler, and ``drain`` keeps joining while the
    other rank runs. Only this rank's own requests get answers."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    from paravt.rollout.lockstep import Lockstep

    model = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_dir, dtype=torch.float32).eval()
    processor = AutoProcessor.from_pretrained(tiny_qwen3_dir)
    ids = processor.tokenizer("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n").input_ids
    other = [  # the other rank's (groups, running) at each tick: two generate calls, then done
        ({(8, 1.0, 1.0): (3, False), (4, 1.0, 1.0): (1, True)}, True),
        ({(4, 1.0, 1.0): (1, True)}, True),
        ({}, False),
    ]
    lockstep = Lockstep(lambda mine: [mine[0], other.pop(0) if other else ({}, False)])
    backend = PolicyBackend(model, processor, temperature=1.0, batch_size=2, lockstep=lockstep)
    calls = []
    generate = model.generate

    def recorded(**kwargs):
        calls.append((kwargs["input_ids"].shape[0], "pixel_values" in kwargs))
        return generate(**kwargs)

    model.generate = recorded
    out = backend.generate(_requests(ids, 1))  # this rank: one text request in (8, 1.0, 1.0)
    assert len(out) == 1 and out[0].token_ids and out[0].error is None
    # (4,…): a filler with the filler image; (8,…): own request, then a filler batch (3 > 2)
    assert calls == [(1, True), (1, False), (1, False)]
    backend.drain()  # the other rank still runs one call of (4,…) with images, then stops
    assert calls[3:] == [(1, True)]
    assert lockstep.ticks == 3 and backend.filler_batches == 3


def test_rollouts_reuse_each_episodes_cache_and_sample_the_same_tokens(tiny_qwen3_dir, video_path):
    """Weights local (one process, DDP, ZeRO-3 gathered): the policy keeps each episode's KV cache
    between turns (engine.reuse_cache) and greedy rollouts give the same ids and logprobs as full
    prefills; under lockstep it keeps nothing."""
    import dataclasses

    from transformers import AutoModelForImageTextToText, AutoProcessor

    from paravt.agent.config import CropSettings, EngineConfig
    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.lockstep import Lockstep
    from paravt.schema.episodes import EpisodeInput

    model = AutoModelForImageTextToText.from_pretrained(tiny_qwen3_dir, dtype=torch.float32).eval()
    processor = AutoProcessor.from_pretrained(tiny_qwen3_dir)
    call = (
        '<tool_call>{"name": "crop_video", "arguments": {"video_path": "v", "start_time": 0, '
        '"end_time": 3}}</tool_call>'
    )
    backend = PolicyBackend(model, processor, with_logprobs=True, first_turn_text=call)
    video = str(video_path("decord__flipping_a_pancake.mkv"))
    inputs = [
        EpisodeInput("a", video, "What happens?", ["x", "y"]),
        EpisodeInput("a", video, "What happens?", ["x", "y"], frames_k=2),  # GRPO: same id
    ]
    crop = CropSettings(min_pixels=784, max_pixels=4096, max_frames=4)
    cfg = EngineConfig(frames=4, min_pixels=784, max_pixels=4096, crop=crop, max_turns=3,
                       max_new_tokens=5, forced_tokens_mcq=4, think_prefix=call)  # fmt: skip
    full = EpisodeEngine(backend, dataclasses.replace(cfg, reuse_cache=False)).run(inputs)
    assert backend.states is None
    reused = EpisodeEngine(backend, cfg).run(inputs)
    stats = backend.states.stats
    # turn 0 is forced (not sampled), turn 1 prefills in full, turns 2-3 continue its state
    assert stats.hits == 2 * 2 and stats.misses == 2
    for a, b in zip(full, reused, strict=True):
        assert a.status == b.status == "ok" and len(b.turns) == 4
        assert a.stream.token_ids == b.stream.token_ids and a.stream.loss_mask == b.stream.loss_mask
        assert (
            max(abs(x - y) for x, y in zip(a.stream.logprobs, b.stream.logprobs, strict=True))
            <= 1e-5
        )
        assert [t.cached_tokens > 0 for t in b.turns] == [False, False, True, True]
    assert len(backend.states) == 0
    sharded = PolicyBackend(model, processor, synced_gpus=None, lockstep=Lockstep(lambda m: [m]))
    sharded.keep_episode_state(2**30)
    assert sharded.states is None
