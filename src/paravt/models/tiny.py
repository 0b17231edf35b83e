"""Tiny, random-initialised Qwen3-VL / Qwen2.5-VL models built fully offline.

Why: no weights can be downloaded in CI (or on an air-gapped cluster node), yet every part of
paravt — the processor, the chat template with tool turns, batched ``generate``, TRL's loss
forward with ``pixel_values`` — must be exercised on a *real* model of the right architecture.
``make_tiny_model`` writes such a model in a few seconds: hidden size 64, two layers, a two-layer
vision tower, a byte-level BPE tokenizer trained here on a small built-in corpus that carries the
Qwen special tokens and paravt's structural tags as single tokens, the matching processor, and a
tool-capable chat template (ours) that renders system / user / assistant turns, assistant tool
calls and tool results with images.

The template is *prefix-preserving*: rendering the first n messages plus the generation prompt is
a prefix of rendering n+1 messages, so the token stream the episode engine builds by concatenation
equals the template's rendering of the same conversation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from paravt.errors import UserError
from paravt.models.tiny_source import (
    QWEN3_VL_IMAGE_PROCESSOR,
    QWEN3_VL_VIDEO_SIZE,
    VISION_TOKENS,
    read_source,
    readme_text,
)

__all__ = ["ARCHS", "PRESETS", "TINY_RECORD", "build_tiny", "make_tiny_model", "own_files"]

#: the file a tiny model folder names its maker and its files in
TINY_RECORD = "paravt_tiny.json"
#: what a build wrote before ``TINY_RECORD`` listed its files (the names of both archs' savers)
LEGACY_FILES = (
    TINY_RECORD, "README.md", "chat_template.jinja", "chat_template.json", "config.json",
    "generation_config.json", "merges.txt", "model.safetensors", "preprocessor_config.json",
    "processor_config.json", "special_tokens_map.json", "tokenizer.json",
    "tokenizer_config.json", "video_preprocessor_config.json", "vocab.json",
)  # fmt: skip

ARCHS = ("qwen3-vl", "qwen2.5-vl")

QWEN_SPECIAL_TOKENS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]
STRUCTURAL_TAGS = [
    "<think>",
    "</think>",
    "<answer>",
    "</answer>",
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
]

# A chat template written for paravt. Content may be a string or a list of
# {"type": "image"} / {"type": "video"} / {"type": "text", "text": ...} parts. Consecutive tool
# messages share one user turn, each wrapped in <tool_response>; assistant tool calls are rendered
# as <tool_call> JSON blocks after the assistant's text.
CHAT_TEMPLATE = r"""
{%- macro render_content(content) -%}
{%- if content is string -%}{{ content }}
{%- else -%}
{%- for part in content -%}
{%- if part.type == 'image' or 'image' in part or 'image_url' in part -%}<|vision_start|><|image_pad|><|vision_end|>
{%- elif part.type == 'video' or 'video' in part -%}<|vision_start|><|video_pad|><|vision_end|>
{%- elif part.type == 'text' -%}{{ part.text }}
{%- endif -%}
{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- if tools and (messages | length == 0 or messages[0].role != 'system') -%}
<|im_start|>system
You can call these tools:
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}<|im_end|>
{% endif -%}
{%- for message in messages -%}
{%- if message.role == 'system' -%}
<|im_start|>system
{{ render_content(message.content) }}
{%- if tools -%}{{- '\n\nYou can call these tools:\n' -}}
{%- for tool in tools -%}{{- tool | tojson -}}{{- '\n' -}}{%- endfor -%}
{%- endif -%}<|im_end|>
{% elif message.role == 'user' -%}
<|im_start|>user
{{ render_content(message.content) }}<|im_end|>
{% elif message.role == 'assistant' -%}
<|im_start|>assistant
{{ render_content(message.content) if message.content is not none else '' }}
{%- if message.tool_calls -%}
{%- for call in message.tool_calls -%}
{%- set fn = call.function if call.function is defined else call -%}
{%- set args = fn.arguments -%}
{{- '\n' if (loop.first and message.content) or not loop.first else '' -}}
<tool_call>
{"name": "{{ fn.name }}", "arguments": {{ args if args is string else (args | tojson) }}}
</tool_call>
{%- endfor -%}
{%- endif -%}
<|im_end|>
{% elif message.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\n<tool_response>\n' -}}{{- render_content(message.content) -}}{{- '\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% endif -%}
"""

_CORPUS = [
    "The video shows a person flipping a pancake in a kitchen.",
    "A rabbit walks across a green meadow under a bright sky.",
    "Question: What happens after the man opens the door? Options: A. He sits B. He runs",
    "<think>I should look at the segment between 10 and 20 seconds.</think>",
    '<tool_call>{"name": "crop_video", "arguments": {"video_path": "v.mp4", '
    '"start_time": 12.5, "end_time": 30.0}}</tool_call>',
    "<tool_response>16 frames from 12.5s to 30.0s.</tool_response>",
    "<answer>B</answer> <answer>12.0 - 20.5</answer> <answer>a man cooking</answer>",
    "0 1 2 3 4 5 6 7 8 9 10 11 12 15 20 30 45 60 90 120 seconds frames minutes 01:30 00:45",
    "Summarise what is visible in the window, then answer with the letter of the option.",
    "A B C D E F G H I J. The answer is C. Option D. (E) (F)",
]


#: What the ``toy`` preset's tokenizer also learns: the words of the toy task (docs/TOY_TASK.md). A real
#: Qwen tokenizer has each colour name as one token; trained on ``_CORPUS`` alone, " magenta" is 6
#: tokens and "red" at a line start differs from " red", which turned the colour-to-letter lookup
#: into multi-token matching a 5 M model did not learn (experiments/toy_paradox/LOG.md). The
#: colours are ``paravt.toy.task.PALETTE``'s; tests/toy/test_toy_task.py checks each is one token.
_TOY_CORPUS = [
    "What colour was the square that appeared briefly? When does the coloured square appear?",
    "A. red B. yellow C. green D. cyan E. blue F. magenta",
    "The windows frames show a red square. The overview frames show a yellow square. "
    "a green square, a cyan square, a blue square, a magenta square.",
    "The red square is option A. The yellow square is option B. The green square is option C. "
    "The cyan square is option D. The blue square is option E. The magenta square is option F.",
]


def _train_tokenizer(vocab_size: int = 800, extra: tuple[str, ...] | list[str] = ()):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=QWEN_SPECIAL_TOKENS + STRUCTURAL_TAGS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator((_CORPUS + list(extra)) * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=QWEN_SPECIAL_TOKENS[1:] + STRUCTURAL_TAGS,
        model_max_length=32768,
        padding_side="left",
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


#: Model sizes by name. ``tiny`` (the default) is for tests: it only has to run. ``bench`` is for
#: benchmarks whose ratios need realistic layer widths. ``toy`` is the
#: smallest model that can *learn* the toy long-video task (docs/TOY_TASK.md) on 2 CPU cores (5.5 M
#: parameters as Qwen3-VL, 5.1 M as Qwen2.5-VL, with the built-in tokenizer; docs/train/SFT.md and
#: benchmarks/README.md have its measured step time). ``rollout`` (34 M parameters as Qwen3-VL) is a random model large
#: enough that generation, not the tools, dominates a rollout on a CPU (``benchmarks/bench_rollout.py``).
#: ``mrope_section`` splits half the attention head dimension over time, height and width. Head
#: dimensions are ones vLLM's CPU attention kernel takes (32, 64, 80, ...; 16 fails at the first
#: generate call), so both presets also serve under vLLM (docs/train/VLLM.md, "The vLLM environment").
PRESETS: dict[str, dict] = {
    "tiny": {
        "hidden": 64, "intermediate": 128, "layers": 2, "heads": 2, "kv_heads": 1, "head_dim": 32,
        "mrope_section": [8, 4, 4],
        "vision_hidden": 32, "vision_intermediate": 64, "vision_depth": 2, "vision_heads": 2,
    },
    "toy": {
        "hidden": 256, "intermediate": 1024, "layers": 4, "heads": 4, "kv_heads": 2, "head_dim": 64,
        "mrope_section": [12, 10, 10],
        "vision_hidden": 128, "vision_intermediate": 256, "vision_depth": 2, "vision_heads": 2,
    },
    # ~120 M parameters (Qwen3-VL) with a real vision-tower width (1024, as Qwen3-VL-2B's) and
    # real attention heads (head_dim 128), so that prefill and vision encoding dominate a turn:
    # for benchmarks (benchmarks/bench_prefill_reuse.py), never trained
    "bench": {
        "hidden": 1024, "intermediate": 2048, "layers": 4, "heads": 8, "kv_heads": 4,
        "head_dim": 128, "mrope_section": [24, 20, 20],
        "vision_hidden": 1024, "vision_intermediate": 4096, "vision_depth": 3, "vision_heads": 16,
    },
    # ~34 M parameters (Qwen3-VL), a narrow vision tower: generation, not the tools or the vision
    # encoder, dominates a rollout on a CPU (benchmarks/bench_rollout.py), never trained
    "rollout": {
        "hidden": 512, "intermediate": 2048, "layers": 8, "heads": 8, "kv_heads": 4, "head_dim": 64,
        "mrope_section": [12, 10, 10],
        "vision_hidden": 128, "vision_intermediate": 256, "vision_depth": 2, "vision_heads": 2,
    },
}  # fmt: skip


def _text_config(vocab: int, tok, arch: str, size: dict) -> dict:
    cfg: dict[str, Any] = dict(
        vocab_size=vocab,
        hidden_size=size["hidden"],
        intermediate_size=size["intermediate"],
        num_hidden_layers=size["layers"],
        num_attention_heads=size["heads"],
        num_key_value_heads=size["kv_heads"],
        max_position_embeddings=32768,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        bos_token_id=None,
    )
    if arch == "qwen3-vl":
        cfg.update(
            head_dim=size["head_dim"],
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": list(size["mrope_section"]),
                "mrope_interleaved": True,
            },
        )
    else:  # Qwen2.5-VL derives the head dimension from hidden / heads
        cfg.update(
            rope_parameters={
                "rope_type": "default",
                "rope_theta": 10000.0,
                "mrope_section": list(size["mrope_section"]),
            },
        )
    return cfg


#: What differs between the two architectures: classes, patch size, vision-tower extras, and
#: the image normalisation (Qwen3-VL: mean = std = 0.5; Qwen2.5-VL: the processor's CLIP default).
_ARCH_SPECS = {
    "qwen3-vl": dict(
        config="Qwen3VLConfig",
        processor="Qwen3VLProcessor",
        video_processor="Qwen3VLVideoProcessor",
        patch=16,
        vision_extra=dict(num_position_embeddings=256, deepstack_visual_indexes=[1]),
        image_norm=dict(image_mean=[0.5, 0.5, 0.5], image_std=[0.5, 0.5, 0.5]),
        # Qwen3-VL's video processor budgets the whole clip (frames x pixels)
        video_size={"shortest_edge": 32 * 32 * 2, "longest_edge": 32 * 32 * 64 * 16},
    ),
    "qwen2.5-vl": dict(
        config="Qwen2_5_VLConfig",
        processor="Qwen2_5_VLProcessor",
        video_processor="Qwen2VLVideoProcessor",
        patch=14,
        vision_extra=dict(window_size=112, fullatt_block_indexes=[1], tokens_per_second=2),
        image_norm={},
        video_size={"shortest_edge": 28 * 28, "longest_edge": 28 * 28 * 64},
    ),
}


def build_tiny(arch: str = "qwen3-vl", seed: int = 0, preset: str = "tiny", source=None):
    """Build (model, processor) in memory. ``arch`` is ``qwen3-vl`` or ``qwen2.5-vl``;
    ``preset`` a size of ``PRESETS`` (``tiny`` for tests, ``toy`` for learning the toy task).

    ``source`` (a ``tiny_source.TokenizerSource``) replaces the trained tokenizer, the chat
    template and the image processor settings with a real checkpoint's.
    """
    import torch
    import transformers
    from transformers import AutoModelForImageTextToText, Qwen2VLImageProcessor

    if arch not in ARCHS:
        raise UserError(f"unknown --arch {arch!r}; choose one of {', '.join(ARCHS)}")
    if preset not in PRESETS:
        raise UserError(f"unknown --preset {preset!r}; choose one of {', '.join(PRESETS)}")
    spec = _ARCH_SPECS[arch]
    size = PRESETS[preset]
    torch.manual_seed(seed)
    if source is not None:
        tok = source.tokenizer
    else:
        tok = _train_tokenizer(extra=_TOY_CORPUS if preset == "toy" else ())
    template = CHAT_TEMPLATE if source is None else source.chat_template
    ids = {t: tok.convert_tokens_to_ids(t) for t in QWEN_SPECIAL_TOKENS}
    patch, merge = spec["patch"], 2
    factor = patch * merge
    config = getattr(transformers, spec["config"])(
        text_config=_text_config(len(tok), tok, arch, size),
        vision_config=dict(
            depth=size["vision_depth"],
            hidden_size=size["vision_hidden"],
            intermediate_size=size["vision_intermediate"],
            num_heads=size["vision_heads"],
            patch_size=patch,
            spatial_merge_size=merge,
            temporal_patch_size=2,
            out_hidden_size=size["hidden"],
            **spec["vision_extra"],
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    patching = dict(patch_size=patch, merge_size=merge, temporal_patch_size=2)
    image_kwargs: dict[str, Any] = dict(
        **patching,
        **spec["image_norm"],
        size={"shortest_edge": factor * factor, "longest_edge": factor * factor * 64},
    )
    video_size = spec["video_size"]
    if source is not None and source.image_processor:
        image_kwargs.update(source.image_processor)
        qwen3_sizes = source.image_processor.get("size") == QWEN3_VL_IMAGE_PROCESSOR["size"]
        if arch == "qwen3-vl" and qwen3_sizes:
            video_size = QWEN3_VL_VIDEO_SIZE
    image_processor = Qwen2VLImageProcessor(**image_kwargs)
    video_processor = getattr(transformers, spec["video_processor"])(**patching, size=video_size)
    processor = getattr(transformers, spec["processor"])(
        image_processor=image_processor,
        tokenizer=tok,
        video_processor=video_processor,
        chat_template=template,
    )
    model = AutoModelForImageTextToText.from_config(config)
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.suppress_tokens = vision_token_ids(tok)
    return model, processor


def vision_token_ids(tokenizer) -> list[int]:
    """Ids of the vision tokens that a random-weight model must be kept from generating."""
    return [tokenizer.convert_tokens_to_ids(t) for t in VISION_TOKENS]


def make_tiny_model(
    out_dir: str | Path,
    arch: str = "qwen3-vl",
    seed: int = 0,
    preset: str = "tiny",
    from_tokenizer: str | Path | None = None,
    chat_template: str | Path | None = None,
) -> Path:
    """Write a small random ``arch`` model + processor to ``out_dir`` (safetensors) and return it.

    ``preset`` picks the size (``PRESETS``). ``from_tokenizer`` (a folder with a real tokenizer
    and chat template, optionally a processor config) builds the model around those files instead
    of the built-in tokenizer; ``chat_template`` (a file) replaces the folder's template. A README
    in ``out_dir`` says where each piece came from. Reload with
    ``AutoModelForImageTextToText.from_pretrained(out_dir)`` and
    ``AutoProcessor.from_pretrained(out_dir)``.
    """
    out = Path(out_dir)
    source = None
    if from_tokenizer is not None:
        source = read_source(from_tokenizer, arch, chat_template)
    model, processor = build_tiny(arch, seed=seed, preset=preset, source=source)
    out.mkdir(parents=True, exist_ok=True)
    written = _save_into(out, model, processor)
    info = {
        "arch": arch,
        "seed": seed,
        "preset": preset,
        "parameters": sum(p.numel() for p in model.parameters()),
        "note": "random weights; for tests, smoke runs and the toy task",
    }
    if source is not None:
        info["from_tokenizer"] = str(from_tokenizer)
        info["chat_template"] = str(chat_template) if chat_template is not None else None
        (out / "README.md").write_text(readme_text(source, arch, seed), encoding="utf-8")
        written.append("README.md")
    # what this build wrote: a later build tells its own files from a user's (``own_files``)
    info["files"] = sorted({*written, TINY_RECORD})
    (out / TINY_RECORD).write_text(json.dumps(info))
    return out


def _save_into(out: Path, model, processor) -> list[str]:
    """Save ``model`` and ``processor`` into ``out`` through a scratch folder beside it, so the
    names of the files they write are known exactly (a user's file in ``out`` is not one)."""
    import shutil
    import tempfile

    scratch = Path(tempfile.mkdtemp(prefix=".tiny-", dir=out))
    try:
        model.save_pretrained(scratch, safe_serialization=True)
        processor.save_pretrained(scratch)
        names = sorted(p.name for p in scratch.iterdir())
        for name in names:
            (scratch / name).replace(out / name)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return names


def own_files(folder: Path) -> set[str] | None:
    """The names an earlier ``make_tiny_model`` wrote into ``folder`` (its ``TINY_RECORD``), or
    None when the folder holds no record of one. A record written before the list was kept
    counts the names every build writes."""
    try:
        info = json.loads((folder / TINY_RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    files = info.get("files")
    if isinstance(files, list) and all(isinstance(f, str) for f in files):
        return set(files)
    return set(LEGACY_FILES)
