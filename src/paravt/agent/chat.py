"""Token-space view of a chat: render with the model's chat template, tokenize only what is new.

The engine builds each episode's token stream by concatenation — prompt ids, then the ids the
model generated (never decoded and re-tokenized), then the ids of each rendered tool turn — so the
trainer's loss sees exactly the tokens that were sampled. ``ChatCodec`` supplies the pieces:

- ``prompt_ids``: the first user turn rendered with the generation prompt (+ a pre-filled prefix).
- ``turn_delta_ids``: the ids that follow a finished assistant turn — the template's closing of
  that turn (unless the model already emitted the stop token), the new tool / user messages, and
  the next generation prompt. The delta is found by rendering a stand-in conversation whose
  assistant turn is a unique marker, so no generated text is ever rendered or tokenized again, and
  templates that rewrite earlier assistant turns still give a correct delta.
- image pads: the template writes one ``<|image_pad|>`` per image; ``expand`` repeats it to the
  number of vision features of that image's grid (``t·h·w / merge²``).
"""

from __future__ import annotations

from typing import Any

from paravt.errors import ParavtError

_MARK = "\u2063PARAVT_ASSISTANT_TURN\u2063"
_PROBE = "\u2063PARAVT_PROBE\u2063"


class ChatTemplateError(ParavtError):
    """The model's chat template cannot express the conversation paravt needs."""


def _arch_of(processor: Any) -> str:
    name = type(processor).__name__.lower()
    if "qwen3" in name:
        return "qwen3-vl"
    if "qwen2_5" in name or "qwen2.5" in name or "qwen2" in name:
        return "qwen2.5-vl"
    return "qwen3-vl"


class ChatCodec:
    """Chat template + tokenizer + image-grid rule of one processor (Qwen3-VL / Qwen2.5-VL)."""

    def __init__(self, processor: Any, arch: str | None = None):
        self.processor = processor
        self.tokenizer = getattr(processor, "tokenizer", processor)
        self.arch = arch or _arch_of(processor)
        ip = getattr(processor, "image_processor", None)
        self.patch_size = int(getattr(ip, "patch_size", 16 if self.arch == "qwen3-vl" else 14))
        self.merge_size = int(getattr(ip, "merge_size", 2))
        self.temporal_patch_size = int(getattr(ip, "temporal_patch_size", 2))
        self.factor = self.patch_size * self.merge_size
        tok = self.tokenizer
        self.image_token = getattr(processor, "image_token", "<|image_pad|>")
        self.image_token_id = tok.convert_tokens_to_ids(self.image_token)
        self.video_token_id = tok.convert_tokens_to_ids("<|video_pad|>")
        self.pad_token_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        vocab = tok.get_vocab()  # a fresh dict of the whole vocabulary per call: read it once
        end = "<|im_end|>" if "<|im_end|>" in vocab else tok.eos_token
        self.end_of_turn = end
        self.end_of_turn_id = tok.convert_tokens_to_ids(end)
        stops = {self.end_of_turn_id}
        if tok.eos_token_id is not None:
            stops.add(tok.eos_token_id)
        self.stop_ids = sorted(stops)
        self.vision_ids = sorted(
            {
                tok.convert_tokens_to_ids(t)
                for t in ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")
                if t in vocab
            }
        )
        self.wraps_tool_response = _PROBE not in self._tool_probe_unwrapped()

    # -- rendering ---------------------------------------------------------------------------
    def render(self, messages: list[dict], add_generation_prompt: bool = False) -> str:
        fn = (
            getattr(self.processor, "apply_chat_template", None)
            or self.tokenizer.apply_chat_template
        )
        try:
            return fn(messages, tokenize=False, add_generation_prompt=add_generation_prompt)
        except Exception as e:  # a template that rejects a role or a content shape
            raise ChatTemplateError(
                f"the chat template of this model cannot render the conversation: {e}"
            ) from e

    def _tool_probe_unwrapped(self) -> str:
        """Rendering of a tool message whose text is the probe, with any wrapping tag removed."""
        text = self.render(
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "a"},
                {"role": "tool", "content": [{"type": "text", "text": _PROBE}]},
            ]
        )
        return text.replace(f"<tool_response>\n{_PROBE}", "").replace(
            f"<tool_response>{_PROBE}", ""
        )

    def encode_text(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

    # -- images ------------------------------------------------------------------------------
    def grid_for(
        self, height: int, width: int, min_pixels: int, max_pixels: int
    ) -> tuple[int, int, int]:
        """Vision grid ``(1, h/patch, w/patch)`` of one image under the pixel budget."""
        h, w = smart_resize(height, width, self.factor, min_pixels, max_pixels)
        return (1, h // self.patch_size, w // self.patch_size)

    def tokens_for_grid(self, grid: tuple[int, int, int]) -> int:
        t, h, w = grid
        return (t * h * w) // (self.merge_size**2)

    def expand(self, ids: list[int], grids: list[tuple[int, int, int]]) -> list[int]:
        """Repeat each image pad to its feature count; the pads must match ``grids`` one to one."""
        out: list[int] = []
        k = 0
        for tid in ids:
            if tid == self.image_token_id:
                if k >= len(grids):
                    raise ChatTemplateError(
                        f"the chat template wrote more image placeholders than the {len(grids)} images given"
                    )
                out.extend([tid] * self.tokens_for_grid(grids[k]))
                k += 1
            else:
                out.append(tid)
        if k != len(grids):
            raise ChatTemplateError(
                f"the chat template wrote {k} image placeholders for {len(grids)} images"
            )
        return out

    # -- token stream pieces -----------------------------------------------------------------
    def prompt_ids(
        self, messages: list[dict], grids: list[tuple[int, int, int]], prefill: str = ""
    ) -> list[int]:
        """Ids of ``messages`` + the generation prompt + ``prefill`` (image pads expanded)."""
        text = self.render(messages, add_generation_prompt=True) + prefill
        return self.expand(self.encode_text(text), grids)

    def turn_delta_text(
        self, new_messages: list[dict], closed_by_model: bool, prefill: str = ""
    ) -> str:
        """Text that follows a finished assistant turn: closing, ``new_messages``, next prompt."""
        stand_in = [{"role": "user", "content": "q"}, {"role": "assistant", "content": _MARK}]
        full = self.render(stand_in + list(new_messages), add_generation_prompt=True)
        at = full.rfind(_MARK)
        if at < 0:
            raise ChatTemplateError("the chat template dropped the assistant turn's content")
        tail = full[at + len(_MARK) :]
        if closed_by_model:
            if not tail.startswith(self.end_of_turn):
                raise ChatTemplateError(
                    f"the chat template does not close an assistant turn with {self.end_of_turn!r}"
                )
            tail = tail[len(self.end_of_turn) :]
        return tail + prefill

    def turn_delta_ids(
        self,
        new_messages: list[dict],
        grids: list[tuple[int, int, int]],
        closed_by_model: bool,
        prefill: str = "",
    ) -> list[int]:
        text = self.turn_delta_text(new_messages, closed_by_model, prefill)
        return self.expand(self.encode_text(text), grids)


def smart_resize(
    height: int, width: int, factor: int, min_pixels: int, max_pixels: int
) -> tuple[int, int]:
    """The Qwen-VL resize rule (kernels' implementation when present, else transformers')."""
    try:
        from paravt.kernels import smart_resize as _sr
    except ImportError:
        _sr = None
    if _sr is not None:
        out = _sr(height, width, factor, min_pixels, max_pixels)
    else:
        from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as _tsr

        out = _tsr(height, width, factor=factor, min_pixels=min_pixels, max_pixels=max_pixels)
    return int(out[0]), int(out[1])
