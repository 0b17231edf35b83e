"""``make-tiny-model --from-tokenizer``: tiny random weights around the real Qwen tokenizers and
templates in ../shared/qwen (skipped without them), and one-line exit-2 errors for bad folders."""

from __future__ import annotations

import json
import shutil

import pytest
from transformers import AutoModelForImageTextToText, AutoProcessor

from paravt.agent.chat import ChatCodec


def _one_line_exit_2(r, *words):
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2 and len(lines) == 1, r.stderr
    for w in words:
        assert w in lines[0]


@pytest.mark.parametrize(
    "name,arch,patch,mean",
    [
        ("qwen2.5-vl-instruct", "qwen2.5-vl", 14, 0.48145466),
        ("qwen3-vl-instruct", "qwen3-vl", 16, 0.5),
        ("qwen3-vl-thinking", "qwen3-vl", 16, 0.5),
    ],
)
def test_real_tokenizer_template_and_processor_settings_are_kept(
    real_tiny_dir, shared_qwen, real_templates, name, arch, patch, mean
):
    folder = real_tiny_dir(name)
    _, tok_dir, template = real_templates[name]
    processor = AutoProcessor.from_pretrained(str(folder))
    model = AutoModelForImageTextToText.from_pretrained(str(folder))
    assert model.config.model_type == ("qwen2_5_vl" if arch == "qwen2.5-vl" else "qwen3_vl")
    assert model.config.text_config.vocab_size == len(processor.tokenizer) > 151000
    ip = processor.image_processor
    assert (ip.patch_size, ip.merge_size) == (patch, 2) and ip.image_mean[0] == pytest.approx(mean)
    source = shared_qwen / (template or f"{tok_dir}/chat_template.jinja")
    if source.is_file():
        assert processor.chat_template == source.read_text(encoding="utf-8")
    codec = ChatCodec(processor)
    assert codec.arch == arch and codec.image_token_id == 151655
    readme = (folder / "README.md").read_text()
    assert str(shared_qwen / tok_dir) in readme
    if arch == "qwen3-vl":  # no processor config in the source: built from docs/PREPROCESSING.md
        assert "PREPROCESSING.md" in readme and ip.size["shortest_edge"] == 65536
    if template:
        assert "paired with the tokenizer" in readme
    info = json.loads((folder / "paravt_tiny.json").read_text())
    assert info["from_tokenizer"] == str(shared_qwen / tok_dir)


def test_a_folder_without_a_chat_template_exits_2(tmp_path, shared_qwen, paravt_cli):
    src = tmp_path / "no-template"
    src.mkdir()
    shutil.copy(shared_qwen / "Qwen3-VL-8B-Instruct" / "tokenizer.json", src)
    cfg = json.loads((shared_qwen / "Qwen3-VL-8B-Instruct" / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (src / "tokenizer_config.json").write_text(json.dumps(cfg))
    _one_line_exit_2(
        paravt_cli("make-tiny-model", tmp_path / "m", "--from-tokenizer", src),
        "no chat template",
        str(src),
    )


def test_a_template_only_folder_exits_2_and_says_how_to_pair_it(tmp_path, shared_qwen, paravt_cli):
    src = shared_qwen / "Qwen3-VL-8B-Thinking"
    _one_line_exit_2(
        paravt_cli("make-tiny-model", tmp_path / "m", "--from-tokenizer", src),
        "no tokenizer",
        "--chat-template",
    )


def test_a_tokenizer_without_vision_tokens_exits_2_naming_them(tmp_path, paravt_cli):
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    vocab = {"a": 0, "<|im_start|>": 1, "<|im_end|>": 2, "<|endoftext|>": 3}
    tok = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="a"))
    )
    src = tmp_path / "text-only"
    tok.save_pretrained(src)
    (src / "chat_template.jinja").write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    r = paravt_cli("make-tiny-model", tmp_path / "m", "--from-tokenizer", src)
    _one_line_exit_2(r, "lacks the vision tokens", "<|image_pad|>", str(src))
