"""The in-process policy sampler uses the trainer's sampling settings, not the model folder's."""

from __future__ import annotations

import torch

from paravt.agent.records import GenRequest
from paravt.train.policy_backend import PolicyBackend


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
            prompt_ids=list(ids),
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
