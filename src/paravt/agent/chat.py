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
- the generation prompt's own opening: a template whose generation prompt already ends in
  ``<think>\n`` (Qwen3-VL Thinking) is detected once (``opening``), and a pre-filled prefix is
  merged with it (``prefill``) so ``<think>`` is never written twice.
- tool results: templates that wrap a ``role: tool`` message in ``<tool_response>`` (Qwen3-VL)
  get tool messages as they are; for templates that do not (Qwen2.5-VL's vision template writes a
  bare ``<|im_start|>tool`` turn) ``tool_turn`` turns each run of tool messages into one user
  message of ``<tool_response>`` blocks — the Hermes convention the Qwen family was trained on —
  and that converted message is what the engine stores, so messages and stream agree.
- image pads: the template writes one ``<|image_pad|>`` per image; ``expand`` repeats it to the
  number of vision features of that image's grid (``t·h·w / merge²``).
"""

from __future__ import annotations

from typing import Any

from paravt.errors import ParavtError, UserError

__all__ = ["ChatCodec"]

_MARK = "\u2063PARAVT_ASSISTANT_TURN\u2063"
_PROBE = "\u2063PARAVT_PROBE\u2063"
_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "paravt_probe_tool",
        "description": "probe",
        "parameters": {"type": "object", "properties": {}},
    },
}
#: The assistant header every Qwen template writes; the generation prompt's opening follows it.
ASSISTANT_HEADER = "<|im_start|>assistant\n"


class ChatTemplateError(ParavtError):
    """The model's chat template cannot express the conversation paravt needs."""


class UnsupportedTemplateError(ChatTemplateError, UserError):
    """Found at engine start: the template cannot render a turn paravt will need (names it)."""


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
        self.name = str(getattr(self.tokenizer, "name_or_path", "") or type(processor).__name__)
        self.wraps_tool_response = _PROBE not in self._tool_probe_unwrapped()
        self.renders_tools = "paravt_probe_tool" in self._render_tools_probe()
        self.opening = self._generation_opening()
        self.strips_reasoning = self._strips_reasoning()

    # -- rendering ---------------------------------------------------------------------------
    def render(
        self, messages: list[dict], add_generation_prompt: bool = False, tools: list | None = None
    ) -> str:
        fn = (
            getattr(self.processor, "apply_chat_template", None)
            or self.tokenizer.apply_chat_template
        )
        extra = {"tools": tools} if tools else {}
        try:
            return fn(
                messages, tokenize=False, add_generation_prompt=add_generation_prompt, **extra
            )
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

    def _render_tools_probe(self) -> str:
        try:
            return self.render([{"role": "user", "content": "q"}], tools=[_PROBE_TOOL])
        except ChatTemplateError:
            return ""

    def _generation_opening(self) -> str:
        """What the generation prompt writes after the assistant header (``<think>\\n`` or "")."""
        msgs = [{"role": "user", "content": "q"}]
        with_prompt = self.render(msgs, add_generation_prompt=True)
        prompt = with_prompt[len(self.render(msgs)) :]
        at = prompt.find(ASSISTANT_HEADER)
        return prompt[at + len(ASSISTANT_HEADER) :] if at >= 0 else ""

    def _strips_reasoning(self) -> bool:
        """Does the template drop an earlier assistant turn's ``<think>`` once a new user message
        follows (Qwen3-VL Thinking)? The stream keeps it; see docs/INTERFACES.md."""
        text = self.render(
            [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": f"<think>\n{_PROBE}\n</think>\n\na"},
                {"role": "user", "content": "q2"},
            ]
        )
        return _PROBE not in text

    def prefill(self, prefix: str) -> str:
        """The text an assistant turn continues: the generation prompt's opening + ``prefix``.

        A ``prefix`` that starts with the opening's tag (``<think>`` on a Thinking template) is
        merged with it instead of repeating it, so the stream holds one ``<think>``.
        Idempotent: ``prefill(prefill(p)) == prefill(p)``.
        """
        tag = self.opening.strip()
        if not tag:
            return prefix
        rest = prefix.lstrip()
        rest = rest[len(tag) :].lstrip("\n") if rest.startswith(tag) else prefix
        return self.opening + rest

    def _appended(self, prefix: str) -> str:
        """The part of ``prefill(prefix)`` that the generation prompt does not already hold."""
        return self.prefill(prefix)[len(self.opening) :]

    def tool_turn(self, messages: list[dict]) -> list[dict]:
        """``messages`` as they are rendered and stored: tool runs wrapped for templates that don't."""
        if self.wraps_tool_response:
            return list(messages)
        out: list[dict] = []
        run_open = False
        for m in messages:
            if m.get("role") != "tool":
                out.append(m)
                run_open = False
                continue
            content = m["content"]
            parts = (
                [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
            )
            block = [
                {"type": "text", "text": "<tool_response>\n"},
                *parts,
                {"type": "text", "text": "\n</tool_response>"},
            ]
            if run_open:
                out[-1]["content"].extend([{"type": "text", "text": "\n"}, *block])
            else:
                out.append({"role": "user", "content": block})
                run_open = True
        return [_merge_text(m) for m in out]

    def check_tool_images(self) -> None:
        """Raise ``UnsupportedTemplateError`` (naming the template) unless a tool turn with an
        image renders with one image placeholder and its text — checked once, at engine start."""
        turn = self.tool_turn(
            [{"role": "tool", "content": [{"type": "image"}, {"type": "text", "text": _PROBE}]}]
        )
        try:
            text = self.turn_delta_text(turn, closed_by_model=False)
        except ChatTemplateError as e:
            raise UnsupportedTemplateError(
                f"the chat template of {self.name} cannot render a tool result with images ({e}); "
                "use evidence=subagent or a model whose template renders images in tool messages"
            ) from e
        pads = text.count(self.image_token)
        if pads != 1 or _PROBE not in text:
            raise UnsupportedTemplateError(
                f"the chat template of {self.name} renders a tool result with one image as {pads} "
                "image placeholders"
                + ("" if _PROBE in text else " and drops its text")
                + "; use evidence=subagent or a model whose template renders images in tool messages"
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
        self,
        messages: list[dict],
        grids: list[tuple[int, int, int]],
        prefill: str = "",
        tools: list | None = None,
    ) -> list[int]:
        """Ids of ``messages`` + the generation prompt + ``prefill`` (image pads expanded).

        Only the part of ``prefill`` the generation prompt does not already write is appended.
        """
        text = self.render(messages, add_generation_prompt=True, tools=tools)
        return self.expand(self.encode_text(text + self._appended(prefill)), grids)

    def turn_delta_text(
        self,
        new_messages: list[dict],
        closed_by_model: bool,
        prefill: str = "",
        tools: list | None = None,
    ) -> str:
        """Text that follows a finished assistant turn: closing, ``new_messages``, next prompt."""
        stand_in = [{"role": "user", "content": "q"}, {"role": "assistant", "content": _MARK}]
        full = self.render(stand_in + list(new_messages), add_generation_prompt=True, tools=tools)
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
        return tail + self._appended(prefill)

    def turn_delta_ids(
        self,
        new_messages: list[dict],
        grids: list[tuple[int, int, int]],
        closed_by_model: bool,
        prefill: str = "",
        tools: list | None = None,
    ) -> list[int]:
        text = self.turn_delta_text(new_messages, closed_by_model, prefill, tools)
        return self.expand(self.encode_text(text), grids)


def _merge_text(message: dict) -> dict:
    """Join neighbouring text parts (a wrapped tool run) so the stored message reads as rendered."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        return message
    parts: list[dict] = []
    for p in content:
        if p.get("type") == "text" and parts and parts[-1].get("type") == "text":
            parts[-1] = {"type": "text", "text": parts[-1]["text"] + p["text"]}
        else:
            parts.append(dict(p))
    return {**message, "content": parts}


def smart_resize(
    height: int, width: int, factor: int, min_pixels: int, max_pixels: int
) -> tuple[int, int]:
    """The Qwen-VL resize rule (kernels' implementation when present, else transformers')."""
    try:
        from paravt.kernels import smart_resize as _sr  # the kernels load torch
    except ImportError:
        _sr = None
    if _sr is not None:
        out = _sr(height, width, factor, min_pixels, max_pixels)
    else:
        from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as _tsr

        out = _tsr(height, width, factor=factor, min_pixels=min_pixels, max_pixels=max_pixels)
    return int(out[0]), int(out[1])
