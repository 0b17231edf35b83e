"""The tiny offline models are real models: reload with the Auto classes, forward, generate."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForImageTextToText, AutoProcessor

from paravt.models.tiny import STRUCTURAL_TAGS, VISION_TOKENS, vision_token_ids


@pytest.fixture(params=["qwen3", "qwen25"])
def tiny_dir(request):
    return request.getfixturevalue(f"tiny_{request.param}_dir")


def _conversation():
    return [
        {"role": "system", "content": "You watch videos."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<0.0 seconds>"},
                {"type": "image"},
                {"type": "text", "text": "What happens?"},
            ],
        },
        {
            "role": "assistant",
            "content": "<think>look closer</think>",
            "tool_calls": [
                {
                    "type": "function",
                    "function": {
                        "name": "crop_video",
                        "arguments": {"start_time": 1, "end_time": 3},
                    },
                },
                {
                    "type": "function",
                    "function": {
                        "name": "crop_video",
                        "arguments": {"start_time": 5, "end_time": 9},
                    },
                },
            ],
        },
        {
            "role": "tool",
            "content": [{"type": "image"}, {"type": "text", "text": "2 frames from 1.0s to 3.0s."}],
        },
        {"role": "tool", "content": "crop_video error: end_time 9 is beyond the video (0-6.0 s)"},
    ]


def test_reload_forward_generate(tiny_dir):
    model = AutoModelForImageTextToText.from_pretrained(tiny_dir)
    processor = AutoProcessor.from_pretrained(tiny_dir)
    assert sum(p.numel() for p in model.parameters()) < 2_000_000
    tok = processor.tokenizer
    for tag in STRUCTURAL_TAGS + VISION_TOKENS + ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]:
        assert len(tok.encode(tag, add_special_tokens=False)) == 1, tag
    text = processor.apply_chat_template(
        _conversation()[:2], add_generation_prompt=True, tokenize=False
    )
    image = torch.randint(0, 256, (3, 60, 100), dtype=torch.uint8)
    inputs = processor(text=[text], images=[image], return_tensors="pt")
    n_img_tokens = int((inputs["input_ids"] == model.config.image_token_id).sum())
    merge = processor.image_processor.merge_size
    assert n_img_tokens == int(inputs["image_grid_thw"].prod()) // merge**2
    with torch.no_grad():
        logits = model(**inputs).logits
    assert logits.shape[:2] == inputs["input_ids"].shape
    out = model.generate(**inputs, max_new_tokens=6, do_sample=False)
    new = out[0, inputs["input_ids"].shape[1] :].tolist()
    assert len(new) >= 1
    assert not set(new) & set(vision_token_ids(tok)), "vision tokens must be suppressed"
    assert json.loads((tiny_dir / "paravt_tiny.json").read_text())["seed"] == 0


def test_chat_template_tool_turns_and_prefix_preserving(tiny_dir):
    processor = AutoProcessor.from_pretrained(tiny_dir)
    conv = _conversation()
    full = processor.apply_chat_template(conv, tokenize=False)
    assert full.count("<tool_call>") == 2 and '"start_time": 5' in full
    assert full.count("<tool_response>") == 2
    # the two tool results share one user turn
    assert full.count("<|im_start|>user") == 2
    assert "<|im_start|>user\n<tool_response>\n<|vision_start|>" in full
    assert "</tool_response>\n<tool_response>\ncrop_video error" in full
    for n in range(1, len(conv)):
        if conv[n - 1]["role"] == "tool" and conv[n]["role"] == "tool":
            continue  # one tool group is rendered as a whole user turn
        head = processor.apply_chat_template(conv[:n], tokenize=False)
        assert full.startswith(head), f"template is not prefix-preserving at message {n}"
    with_prompt = processor.apply_chat_template(
        conv[:2], tokenize=False, add_generation_prompt=True
    )
    assert full.startswith(with_prompt)


def test_toy_preset_is_a_learnable_size_of_the_real_architecture(tmp_path):
    """The toy preset: Qwen3-VL classes, 5-30 M parameters, and a forward + backward with a frame."""
    from paravt.errors import UserError
    from paravt.models.tiny import PRESETS, make_tiny_model

    out = make_tiny_model(tmp_path / "toy", preset="toy")
    model = AutoModelForImageTextToText.from_pretrained(out)
    processor = AutoProcessor.from_pretrained(out)
    n = sum(p.numel() for p in model.parameters())
    assert 5_000_000 <= n <= 30_000_000, n
    assert type(model).__name__ == "Qwen3VLForConditionalGeneration"
    assert model.config.text_config.hidden_size == PRESETS["toy"]["hidden"] == 256
    assert model.config.text_config.num_hidden_layers == 4
    assert model.config.vision_config.hidden_size == 128 and model.config.vision_config.depth == 2
    assert json.loads((out / "paravt_tiny.json").read_text())["parameters"] == n
    text = processor.apply_chat_template(
        _conversation()[:2], add_generation_prompt=True, tokenize=False
    )
    image = torch.randint(0, 256, (3, 64, 64), dtype=torch.uint8)
    inputs = processor(text=[text], images=[image], return_tensors="pt")
    loss = model(**inputs, labels=inputs["input_ids"]).loss
    loss.backward()
    assert torch.isfinite(loss) and model.lm_head.weight.grad is not None
    with pytest.raises(UserError, match="preset"):
        make_tiny_model(tmp_path / "bad", preset="huge")
