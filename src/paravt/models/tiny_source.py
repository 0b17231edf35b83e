"""Read a real checkpoint's tokenizer, chat template and processor settings for a tiny model.

Why: every template-dependent part of paravt (tool prompt, tool-result rendering, the Thinking
template's ``<think>`` generation prompt, image-pad expansion) must be tested on the templates
users actually run, not only on the tiny model's own. ``make_tiny_model(..., from_tokenizer=SRC)``
puts tiny random weights of the right architecture around the files this module reads from SRC.

A source folder holds a tokenizer (``tokenizer.json``, or ``vocab.json`` + ``merges.txt``) and a
chat template (``chat_template.jinja``, ``chat_template.json``, or one embedded in
``tokenizer_config.json``); ``preprocessor_config.json`` is optional. A template-only folder (the
Qwen3-VL Thinking copy in ``../shared/qwen``) is paired with another folder's tokenizer by passing
its template as ``chat_template``. Where the source has no processor config, Qwen3-VL's is built
from docs/PREPROCESSING.md's values (below), and the README written next to the model says so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from paravt.errors import UserError

__all__ = ["detect_arch"]

#: Tokens a random-weight model must never generate: a stray vision token breaks rope indexing.
#: (Defined here, not in ``tiny``, because ``tiny`` imports this module.)
VISION_TOKENS = ["<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>"]
#: Tokens the engine and the vision tower need; a tokenizer without them cannot hold an image.
REQUIRED_TOKENS = ("<|im_start|>", "<|im_end|>", *VISION_TOKENS)

#: Qwen3-VL processor settings where a checkpoint folder has none (docs/PREPROCESSING.md §5.2 and
#: §6: patch 16, merge 2, temporal patch 2, mean = std = 0.5, image size 65536..16777216 pixels,
#: video 4096..25165824 per clip).
QWEN3_VL_IMAGE_PROCESSOR = dict(
    patch_size=16,
    merge_size=2,
    temporal_patch_size=2,
    image_mean=[0.5, 0.5, 0.5],
    image_std=[0.5, 0.5, 0.5],
    size={"shortest_edge": 65536, "longest_edge": 16777216},
)
QWEN3_VL_VIDEO_SIZE = {"shortest_edge": 4096, "longest_edge": 25165824}


@dataclass
class TokenizerSource:
    """What was read from a source folder, and where each piece came from (for the README)."""

    tokenizer: object
    chat_template: str
    image_processor: dict | None  # preprocessor_config.json's patching / size / norm, or None
    arch: str | None  # what the folder itself says (config.json / processor_class), or None
    notes: list[str] = field(default_factory=list)


def detect_arch(src: str | Path) -> str | None:
    """``qwen2.5-vl`` / ``qwen3-vl`` from the folder's config.json or processor config, else None."""
    src = Path(src)
    names = []
    for fname, key in (
        ("config.json", "model_type"),
        ("preprocessor_config.json", "processor_class"),
    ):
        p = src / fname
        if p.is_file():
            names.append(str(json.loads(p.read_text(encoding="utf-8")).get(key, "")).lower())
    for n in names:
        if "qwen2_5" in n or "qwen2.5" in n:
            return "qwen2.5-vl"
        if "qwen3" in n:
            return "qwen3-vl"
    return None


def _template_from(path: Path) -> str:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        text = json.loads(text).get("chat_template") or ""
    return text


def _find_template(src: Path, tokenizer) -> tuple[str, str] | None:
    for name in ("chat_template.jinja", "chat_template.json"):
        if (src / name).is_file():
            text = _template_from(src / name)
            if text.strip():
                return text, f"{src / name}"
    embedded = getattr(tokenizer, "chat_template", None)
    if isinstance(embedded, str) and embedded.strip():
        return embedded, f"{src / 'tokenizer_config.json'} (embedded chat_template)"
    return None


def read_source(
    src: str | Path, arch: str, chat_template: str | Path | None = None
) -> TokenizerSource:
    """Load and check SRC; ``chat_template`` (a file) replaces the folder's template.

    Raises ``UserError`` naming the missing piece: no folder, no tokenizer, no chat template, or
    a tokenizer without the vision tokens.
    """
    from transformers import AutoTokenizer

    src = Path(src)
    if not src.is_dir():
        raise UserError(
            f"--from-tokenizer {src}: not a folder; pass a folder with a tokenizer and a chat template"
        )
    has_tok = (src / "tokenizer.json").is_file() or (
        (src / "vocab.json").is_file() and (src / "merges.txt").is_file()
    )
    if not has_tok:
        raise UserError(
            f"--from-tokenizer {src}: no tokenizer (tokenizer.json, or vocab.json + merges.txt); "
            "for a template-only folder pass its template with --chat-template and a tokenizer folder "
            "with --from-tokenizer"
        )
    tok = AutoTokenizer.from_pretrained(str(src))
    vocab = tok.get_vocab()
    missing = [t for t in REQUIRED_TOKENS if t not in vocab]
    if missing:
        raise UserError(
            f"--from-tokenizer {src}: the tokenizer lacks the vision tokens {', '.join(missing)}; "
            "use a Qwen-VL tokenizer"
        )
    notes = [f"tokenizer: {src} ({type(tok).__name__}, {len(tok)} tokens)"]
    if chat_template is not None:
        path = Path(chat_template)
        if not path.is_file():
            raise UserError(
                f"--chat-template {path}: file not found; pass a .jinja or chat_template.json file"
            )
        template = _template_from(path)
        if not template.strip():
            raise UserError(f"--chat-template {path}: no chat template in the file")
        notes.append(f"chat template: {path} (paired with the tokenizer above)")
    else:
        found = _find_template(src, tok)
        if found is None:
            raise UserError(
                f"--from-tokenizer {src}: no chat template (chat_template.jinja, chat_template.json "
                "or tokenizer_config.json's chat_template); add one or pass --chat-template FILE"
            )
        template, where = found
        notes.append(f"chat template: {where}")
    image_processor = None
    pp = src / "preprocessor_config.json"
    if pp.is_file():
        raw = json.loads(pp.read_text(encoding="utf-8"))
        keep = ("patch_size", "merge_size", "temporal_patch_size", "image_mean", "image_std")
        image_processor = {k: raw[k] for k in keep if k in raw}
        if "min_pixels" in raw and "max_pixels" in raw:
            image_processor["size"] = {
                "shortest_edge": raw["min_pixels"],
                "longest_edge": raw["max_pixels"],
            }
        elif "size" in raw:
            image_processor["size"] = raw["size"]
        notes.append(f"processor settings: {pp}")
    elif arch == "qwen3-vl":
        image_processor = dict(QWEN3_VL_IMAGE_PROCESSOR)
        notes.append(
            "processor settings: none in the source folder; built from PREPROCESSING.md's Qwen3-VL "
            "values (patch 16, merge 2, temporal patch 2, mean = std = 0.5, image size "
            "65536..16777216 pixels, video 4096..25165824 per clip), which that file quotes from "
            "third-party copies of the checkpoint's preprocessor_config.json"
        )
    return TokenizerSource(tok, template, image_processor, detect_arch(src), notes)


def readme_text(source: TokenizerSource, arch: str, seed: int) -> str:
    """The README written next to a tiny model built around a real tokenizer."""
    lines = [
        f"# Tiny random {arch} model around a real tokenizer and chat template",
        "",
        (
            "Written by `paravt make-tiny-model --from-tokenizer`. The weights are random (seed "
            f"{seed}); only the tokenizer, the chat template and the processor settings are real. "
            "For tests and smoke runs, never for answers."
        ),
        "",
        "Where each piece came from:",
        "",
    ]
    lines += [f"- {n}" for n in source.notes]
    return "\n".join(lines) + "\n"
