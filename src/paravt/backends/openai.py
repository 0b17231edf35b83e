"""``openai`` backend: any OpenAI-compatible chat server (vLLM, SGLang, ...), through the
``openai`` SDK's ``AsyncOpenAI``.

The server applies the model's chat template, so this backend works on messages, not tokens
(``codec`` is ``None``). Frames go as base64 images (``data:`` URLs). Tool results go back as a
``user`` turn holding each result in ``<tool_response>`` tags — what Qwen templates render for a
``tool`` turn, and the only form every OpenAI-compatible server accepts with images — or, with
``tool_role="tool"``, as ``tool`` messages for servers that take images there.

A pre-filled start of the assistant turn (``engine.think_prefix``) reaches the server in one of two
ways (``prefill_via``): ``continue`` sends it as a final assistant message with
``continue_final_message`` (vLLM, SGLang); ``template`` sends the model's own chat template with
the pre-fill appended to its generation prompt, through ``chat_template_kwargs`` (``transformers
serve``, which refuses the ``continue`` fields with HTTP 422). With ``continue`` the request also
asks for special tokens to stay in the reply (``skip_special_tokens: false``).

Servers that parse the reply (``transformers serve`` always does for Qwen models; vLLM with a tool
parser) move ``<think>`` into ``reasoning_content`` and the ``<tool_call>`` blocks into
``tool_calls``; ``reply_text`` writes them back into the text the model generated, in the Qwen
layout, so the engine parses the same calls it would parse from a local model.

Transport: one ``AsyncOpenAI`` client per backend (pooled connections), living on an event loop
of its own thread (``paravt.backends.http.LoopThread``: the SDK's pool belongs to one loop, and
the engine runs a fresh loop per run). ``agenerate`` is a coroutine on that loop, awaited from
the engine's; ``generate`` (a synchronous round) gathers its requests there. At most
``concurrency`` requests are in flight at once (a semaphore), so a server such as vLLM batches
whatever is in flight while the engine runs other episodes' tools. The SDK retries a request that
meets a connection error, a timeout, HTTP 408/409/429 or 5xx (``retries`` times, exponential
backoff from 0.5 s, honouring the server's ``Retry-After``) and bounds each attempt
(``timeout_s``). The body goes through the SDK's own ``post`` as ``payload`` builds it, vLLM's
fields (``skip_special_tokens``, ``continue_final_message``, ...) beside the standard ones, and
the reply comes back as its JSON: ``chat.completions.create`` would walk every message part
through its typed-dict transform and build a typed reply that is dumped back to a dict, twice the
client CPU a request on ``benchmarks/bench_openai_rps.py``. When retries run out, or on
another HTTP error, the ``Generation`` carries ``error`` and the engine records it as an episode
error — a failed request is never scored as an answer.

Serves the engine's needs: images only (frames resized to their budget under
``resize_arch``, sent as ``data:`` URLs). No token ids (``codec`` is ``None``: the engine sends
messages), no logprobs, no pixel rows.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import logging
import time
import weakref
from pathlib import Path
from typing import Any

import httpx2 as httpx
import openai

from paravt.agent.backend import BackendBase
from paravt.agent.config import BackendConfig
from paravt.backends.http import LoopThread
from paravt.errors import ConfigError, UserError
from paravt.schema.episodes import Generation, GenRequest, ImageItem

__all__ = ["OpenAIBackend", "budget_frame", "reported_cached_tokens"]

logger = logging.getLogger(__name__)

#: end-of-turn markers a reply parser leaves inside a ``<think>`` region that never closed
_END_MARKERS = ("<|im_end|>", "<|endoftext|>")
#: appended to the chat template under ``prefill_via="template"``: the generation prompt, then the
#: pre-fill (a template variable sent beside the template in ``chat_template_kwargs``)
_PREFILL_TAIL = "{%- if add_generation_prompt %}{{- paravt_prefill }}{%- endif %}"


def opens_think(prefill: str) -> bool:
    """True when ``prefill`` leaves a ``<think>`` open: the reply continues inside it."""
    return prefill.rfind("<think>") > prefill.rfind("</think>")


def reply_text(
    message: dict, finish_reason: str, prefill: str = "", served_model: str | None = None
) -> str:
    """The text the model generated after ``prefill``, from a chat-completion ``message``.

    A server that split the reply gives ``reasoning_content`` (or ``reasoning``), ``content`` and
    ``tool_calls``; they are joined back in the Qwen layout — ``<think>\n{reasoning}\n</think>\n``
    (without the opening tag when the pre-fill opened it), the content, then each call as
    ``<tool_call>\n{"name": ..., "arguments": ...}\n</tool_call>`` on its own line — which is
    what a Qwen model writes, so a well-formed reply comes back byte for byte. ``transformers
    serve`` parses the pre-filled part too: the pre-fill's calls (the first ones) and the
    reasoning of a think it opened and closed are left out, since the engine prepends the
    pre-fill itself. A ``<think>`` that never closed (the parser then keeps the end-of-turn marker
    in it, or the reply hit the token limit) stays unclosed. ``transformers serve`` 5.24 answers
    such a reply (reasoning only) with the model's name as ``content``; with ``served_model``
    given, that content is dropped.
    """
    text = _with_calls(_content(message, prefill, served_model), message, prefill)
    reasoning = _reply_reasoning(message, prefill)
    if not reasoning or "<think>" in text:
        return text
    return _with_think(text, reasoning, prefill, finish_reason)


def _content(message: dict, prefill: str, served_model: str | None) -> str:
    """The reply's ``content``: without the model's name that ``transformers serve`` puts there
    for a reasoning-only reply, and without the pre-fill a raw reply starts with."""
    text = message.get("content") or ""
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    if reasoning and served_model is not None and text == served_model:
        return ""
    if not reasoning and prefill and text.startswith(prefill):
        # a raw reply that starts at the assistant header holds the pre-fill too
        return text[len(prefill) :]
    return text


def _with_calls(text: str, message: dict, prefill: str) -> str:
    """``text`` followed by the reply's parsed calls, each on its own line, less the pre-fill's."""
    calls = [_call_block(tc) for tc in message.get("tool_calls") or []]
    prefilled_calls = prefill.count("</tool_call>")
    if prefilled_calls and len(calls) >= prefilled_calls:
        calls = calls[prefilled_calls:]
    if not calls:
        return text
    return "\n".join([text, *calls]) if text else "\n".join(calls)


def _reply_reasoning(message: dict, prefill: str) -> str | None:
    """The reasoning the reply holds, or ``None`` when it is the pre-fill's own think, closed
    before the reply began."""
    if "</think>" in prefill and not opens_think(prefill):
        return None
    return message.get("reasoning_content") or message.get("reasoning")


def _strip_end_markers(body: str) -> tuple[str, bool]:
    """``body`` without the end-of-turn markers a parser left at its end, and whether it had any."""
    ended = body.endswith(_END_MARKERS)
    while body.endswith(_END_MARKERS):
        body = next(body.removesuffix(m) for m in _END_MARKERS if body.endswith(m)).rstrip()
    return body, ended


def _with_think(text: str, reasoning: str, prefill: str, finish_reason: str) -> str:
    """``reasoning`` written back as the think before ``text`` (its opener left out when the
    pre-fill opened it); a think that never closed stays unclosed."""
    opener = "" if opens_think(prefill) else "<think>\n"
    if opener == "":  # the parser may hold the pre-filled start of the think too
        started = prefill[prefill.rfind("<think>") + len("<think>") :].strip()
        if started and reasoning.startswith(started):
            reasoning = reasoning[len(started) :]
    body, ended = _strip_end_markers(reasoning.rstrip())
    if ended or (finish_reason == "length" and not text):  # the think never closed
        return opener + (body if ended else reasoning)
    return f"{opener}{reasoning}\n</think>\n{text}"


def _call_block(tool_call: dict) -> str:
    """One parsed tool call written back as the Qwen ``<tool_call>`` block it was read from."""
    fn = tool_call.get("function") or {}
    args = fn.get("arguments")
    if isinstance(args, str):
        # an unreadable string is kept as the server gave it; the engine reports the bad call
        with contextlib.suppress(json.JSONDecodeError):
            args = json.loads(args)
    block = json.dumps({"name": fn.get("name"), "arguments": args}, ensure_ascii=False)
    return f"<tool_call>\n{block}\n</tool_call>"


def read_chat_template(path: str) -> str:
    """The chat template in ``path``: a Jinja file, or a model folder (its ``chat_template.jinja``,
    else the ``chat_template`` of its processor or tokenizer config)."""
    where = Path(path)
    if where.is_file():
        return where.read_text(encoding="utf-8")
    if (where / "chat_template.jinja").is_file():
        return (where / "chat_template.jinja").read_text(encoding="utf-8")
    for name in ("chat_template.json", "processor_config.json", "tokenizer_config.json"):
        try:
            template = json.loads((where / name).read_text(encoding="utf-8")).get("chat_template")
        except (OSError, json.JSONDecodeError, AttributeError):
            continue
        if isinstance(template, str):
            return template
    raise ConfigError(
        f"backend.chat_template {path}: no chat template there (give a .jinja file or a model "
        "folder that holds chat_template.jinja)"
    )


def budget_frame(item: ImageItem, arch: str | None) -> Any:
    """The frame resized to its pixel budget under ``arch``'s size rule (``None``: unchanged).

    The server's processor would otherwise apply its own, much larger default budget, so the
    model would see other sizes (and many more tokens) than docs/PROTOCOL.md §2/§3 and the ``hf``
    backend give it. Antialiased bicubic, as the processors use; the server's own resize then finds
    the size already on its grid and leaves it.
    """
    frame = item.data.detach().to("cpu")
    if arch is None:
        return frame
    from torchvision.transforms.v2 import functional as tvf

    from paravt.kernels import smart_resize  # the kernels load torch
    from paravt.kernels.spec import arch_spec

    # the plain size rule (no minimum-patch check): the server upsizes tiny frames the same way
    factor = arch_spec(arch).factor
    h, w = smart_resize(
        int(frame.shape[-2]), int(frame.shape[-1]), factor, item.min_pixels, item.max_pixels
    )
    if (h, w) == tuple(frame.shape[-2:]):
        return frame
    return tvf.resize(frame, [h, w], interpolation=tvf.InterpolationMode.BICUBIC, antialias=True)


def encode_image(item: ImageItem, fmt: str = "jpeg", arch: str | None = None) -> str:
    """A uint8 ``[3, H, W]`` frame as a ``data:`` URL, resized to its budget for ``arch``."""
    from PIL import Image

    array = budget_frame(item, arch).permute(1, 2, 0).contiguous().numpy()
    buf = io.BytesIO()
    if fmt == "png":
        Image.fromarray(array).save(buf, format="PNG")
    else:
        Image.fromarray(array).save(buf, format="JPEG", quality=90)
    b64 = base64.b64encode(buf.getvalue()).decode("ascii")
    return f"data:image/{fmt};base64,{b64}"


def reported_cached_tokens(reply: dict) -> int | None:
    """``usage.prompt_tokens_details.cached_tokens`` of an OpenAI-style reply (vLLM's prefix-cache
    hits; sent only with ``--enable-prompt-tokens-details``), None when absent."""
    details = (reply.get("usage") or {}).get("prompt_tokens_details") or {}
    value = details.get("cached_tokens") if isinstance(details, dict) else None
    return int(value) if isinstance(value, int) else None


class OpenAIBackend(BackendBase):
    """Chat completions against ``base_url`` (e.g. ``http://127.0.0.1:8000/v1``)."""

    name = "openai"
    codec = None

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str = "EMPTY",
        concurrency: int = 8,
        retries: int = 3,
        timeout_s: float = 300.0,
        image_format: str = "jpeg",
        tool_role: str = "user",
        resize_arch: str | None = "qwen3-vl",
        prefill_via: str = "continue",
        chat_template: str | None = None,
    ):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.concurrency = concurrency
        self.retries = retries
        self.timeout_s = timeout_s
        self.image_format = image_format
        self.tool_role = tool_role
        self.resize_arch = resize_arch
        self.prefill_via = prefill_via
        # the model's chat template with the pre-fill tail (prefill_via="template")
        self.prefill_template = chat_template + _PREFILL_TAIL if chat_template is not None else None
        if prefill_via == "template" and chat_template is None:
            raise ConfigError(
                "backend prefill_via=template needs the model's chat template "
                "(set backend.chat_template to its .jinja file or the model folder)"
            )
        # data: URL of each image, encoded once: an episode resends its whole context every turn
        # and the generations of one prompt share its overview images (id -> (weakref, url))
        self._urls: dict[int, tuple[weakref.ref, str]] = {}
        # the SDK client, its loop and the in-flight bound: made on first use (module doc)
        self._runner: LoopThread | None = None
        self._sdk: openai.AsyncOpenAI | None = None
        self._slots: asyncio.Semaphore | None = None

    def image_url(self, item: ImageItem) -> str:
        """``item`` as a ``data:`` URL, encoded on first use and reused while the item lives."""
        key = id(item)
        hit = self._urls.get(key)
        if hit is not None and hit[0]() is item:
            return hit[1]
        url = encode_image(item, self.image_format, self.resize_arch)
        ref = weakref.ref(item, lambda _ref, key=key: self._urls.pop(key, None))
        self._urls[key] = (ref, url)
        return url

    @classmethod
    def from_config(cls, cfg: BackendConfig) -> OpenAIBackend:
        return cls(
            cfg.base_url,
            cfg.model,
            api_key=cfg.api_key,
            concurrency=cfg.concurrency,
            retries=cfg.retries,
            timeout_s=cfg.timeout_s,
            image_format=cfg.image_format,
            tool_role=cfg.tool_role,
            resize_arch=None if cfg.resize_arch == "none" else cfg.resize_arch,
            prefill_via=cfg.prefill_via,
            chat_template=read_chat_template(cfg.chat_template) if cfg.chat_template else None,
        )

    # -- messages → wire format --------------------------------------------------------------
    def wire_messages(self, req: GenRequest) -> list[dict]:
        """The engine's chat (HF format + image list) as OpenAI chat messages."""
        images = iter(req.images)
        out: list[dict] = []

        def parts_of(content: Any) -> list[dict]:
            if isinstance(content, str):
                return [{"type": "text", "text": content}]
            parts = []
            for p in content:
                if p.get("type") == "image":
                    url = self.image_url(next(images))
                    parts.append({"type": "image_url", "image_url": {"url": url}})
                elif p.get("type") == "text":
                    parts.append({"type": "text", "text": p["text"]})
            return parts

        for m in req.messages:
            role, content = m["role"], m["content"]
            if role == "tool" and self.tool_role == "user":
                # the Qwen rendering of a tool turn: each result inside <tool_response> tags
                parts = [{"type": "text", "text": "<tool_response>\n"}, *parts_of(content)]
                parts.append({"type": "text", "text": "\n</tool_response>"})
                if out and out[-1].get("_tool_group"):
                    out[-1]["content"].append({"type": "text", "text": "\n"})
                    out[-1]["content"].extend(parts)
                else:
                    out.append({"role": "user", "content": parts, "_tool_group": True})
                continue
            if isinstance(content, str):
                out.append({"role": role, "content": content})
            else:
                out.append({"role": role, "content": parts_of(content)})
        for m in out:
            m.pop("_tool_group", None)
        return out

    def payload(self, req: GenRequest) -> dict:
        messages = self.wire_messages(req)
        body: dict = {
            "model": self.model,
            "messages": messages,
            "max_tokens": req.max_new_tokens,
            "temperature": req.temperature,
            "top_p": req.top_p,
        }
        if self.prefill_via == "continue":
            # vLLM and SGLang drop special tokens from the reply text unless told not to, and a
            # tokenizer may mark <think>/<tool_call> special (the toy models' do; Qwen's own do
            # not): the calls would vanish from the text, silently (measured on the shipped toy
            # model through vLLM 0.32: 0 calls, 0% against hf's 5 calls, 66.7%)
            body["skip_special_tokens"] = False
        if req.tools:  # engine.tool_prompt=native: the server's template renders the schema;
            # tool_choice "none" keeps the server from parsing calls itself (paravt parses them)
            body["tools"] = req.tools
            body["tool_choice"] = "none"
        if req.prefill and self.prefill_via == "template":  # transformers serve
            body["chat_template_kwargs"] = {
                "chat_template": self.prefill_template,
                "paravt_prefill": req.prefill,
            }
        elif req.prefill:  # vLLM / SGLang: continue a pre-filled assistant message
            messages.append({"role": "assistant", "content": req.prefill})
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        return body

    # -- HTTP --------------------------------------------------------------------------------
    def _loop(self) -> LoopThread:
        if self._runner is None:
            self._runner = LoopThread("paravt-openai")
        return self._runner

    def _client(self) -> openai.AsyncOpenAI:
        """The SDK client (called on the backend's loop, where its connection pool lives)."""
        if self._sdk is None:
            self._sdk = openai.AsyncOpenAI(
                base_url=self.url.removesuffix("/chat/completions"),
                api_key=self.api_key,
                max_retries=self.retries,
                timeout=self.timeout_s,
                http_client=httpx.AsyncClient(
                    limits=httpx.Limits(
                        max_connections=self.concurrency,
                        max_keepalive_connections=self.concurrency,
                    )
                ),
            )
            self._slots = asyncio.Semaphore(self.concurrency)
        return self._sdk

    async def _post(self, body: dict) -> dict:
        """One chat completion, the body as built (vLLM's own fields included), through the SDK's
        transport (its retries, timeout and ``Retry-After``); the server's JSON as it came."""
        client = self._client()
        assert self._slots is not None
        async with self._slots:
            return await client.post("/chat/completions", body=body, cast_to=dict)

    def _failure(self, e: openai.APIError) -> str:
        """One line for a request the SDK gave up on: the status or the connection error, and
        how many attempts were made."""
        if isinstance(e, openai.APIStatusError):
            detail = " ".join(e.response.text.split())[:300]
            again = e.status_code in (408, 409, 429) or e.status_code >= 500
            what = f"HTTP {e.status_code} from {self.url}: {detail}".strip()
        else:
            again, what = True, f"cannot reach {self.url}: {e}"
        return f"{what} (after {self.retries + 1 if again else 1} attempts)"

    async def _one(self, req: GenRequest) -> Generation:
        try:
            body = self.payload(req)
        except Exception as e:  # noqa: BLE001 - a bad request is this episode's error
            logger.warning("%s: cannot build the request", req.key, exc_info=True)
            return Generation(
                error=f"cannot build the request: {type(e).__name__}: {e}", finish_reason="error"
            )
        t0 = time.perf_counter()
        try:
            reply = await self._post(body)
        except openai.APIError as e:
            return Generation(
                error=self._failure(e),
                finish_reason="error",
                generate_s=time.perf_counter() - t0,
            )
        gen = self._parse(reply, req.prefill)
        gen.generate_s = time.perf_counter() - t0
        return gen

    def _parse(self, reply: dict, prefill: str = "") -> Generation:
        try:
            choice = reply["choices"][0]
            finish = choice.get("finish_reason") or "stop"
            text = reply_text(choice.get("message") or {}, finish, prefill, self.model)
        except (KeyError, IndexError, TypeError, AttributeError):
            return Generation(
                error=f"malformed reply from {self.url}: {str(reply)[:200]}", finish_reason="error"
            )
        usage = reply.get("usage") or {}
        return Generation(
            text=text,
            finish_reason="length" if finish == "length" else "stop",
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            cached_tokens=reported_cached_tokens(reply),
        )

    # -- before the first episode -------------------------------------------------------------
    def check_server(self, budgets: list[tuple[int, int, str]]) -> None:
        """UserError (one line) when the server cannot run these episodes as configured: nothing
        answers at ``base_url``, it does not serve ``model``, or its processor would re-size the
        frames of a pixel budget (``(min_pixels, max_pixels, config keys)``) — each frame would
        then cost another number of vision tokens than the budget gives it (docs/PROTOCOL.md §2).

        The budget is measured, not read from a config the server may not share: for a frame
        near each end of the budget, sized as ``encode_image`` sends it, the prompt tokens of one
        message with the frame and one without differ by its vision tokens and the two markers a
        Qwen template puts around them. Skipped with ``resize_arch`` none (no size rule to hold).
        """
        base = self.url.removesuffix("/chat/completions")
        try:
            served = self._loop().run(self._served())
        except openai.APIStatusError as e:
            raise UserError(
                f"backend.base_url {base}: GET /models answered HTTP {e.status_code}; point "
                "backend.base_url at an OpenAI-compatible server's /v1"
            ) from e
        except openai.APIError as e:
            raise UserError(
                f"backend.base_url {base}: no server answers ({e}); start the OpenAI-compatible "
                "server first (e.g. vllm serve MODEL) or fix backend.base_url"
            ) from e
        if self.model not in served:
            raise UserError(
                f"backend.model {self.model!r} is not served at {base} (it serves "
                f"{', '.join(map(str, served)) or 'nothing'}): set backend.model to that name"
            )
        if self.resize_arch is None:
            return
        for min_pixels, max_pixels, keys in budgets:
            for source in ((720, 1280), (8, 8)):  # lands near the budget's top, then its bottom
                self._check_frame(base, source, min_pixels, max_pixels, keys)

    def _check_frame(
        self, base: str, source: tuple[int, int], min_pixels: int, max_pixels: int, keys: str
    ) -> None:
        import torch

        from paravt.kernels.spec import arch_spec

        item = ImageItem(
            data=torch.zeros(3, *source, dtype=torch.uint8),
            time=0.0,
            source="overview",
            min_pixels=min_pixels,
            max_pixels=max_pixels,
        )
        frame = budget_frame(item, self.resize_arch)
        h, w = int(frame.shape[-2]), int(frame.shape[-1])
        factor = arch_spec(self.resize_arch).factor
        want = (h // factor) * (w // factor)
        url = encode_image(item, "png", self.resize_arch)
        with_image = [
            {"type": "image_url", "image_url": {"url": url}},
            {"type": "text", "text": "."},
        ]
        counts = []
        for content in (with_image, [{"type": "text", "text": "."}]):
            body = {"model": self.model, "messages": [{"role": "user", "content": content}],
                    "max_tokens": 1, "temperature": 0}  # fmt: skip
            try:
                usage = self._loop().run(self._post(body)).get("usage") or {}
            except openai.APIStatusError as e:
                detail = " ".join(e.response.text.split())[:200]
                raise UserError(
                    f"backend.base_url {base}: a {h}x{w} frame ({keys} [{min_pixels}, "
                    f"{max_pixels}]) was refused, HTTP {e.status_code}: {detail}"
                ) from e
            if not isinstance(usage.get("prompt_tokens"), int):
                return  # a server that does not count tokens: nothing to compare
            counts.append(usage["prompt_tokens"])
        got = counts[0] - counts[1] - 2
        if got != want:
            raise UserError(
                f"the server at {base} turns a {h}x{w} frame ({keys} [{min_pixels}, "
                f"{max_pixels}]) into {got} vision tokens, not {want}: its image processor "
                f"re-sizes this budget; start it with --mm-processor-kwargs "
                f'\'{{"size": {{"shortest_edge": {min_pixels}, "longest_edge": {max_pixels}}}}}\' '
                f"or set {keys} inside its range"
            )

    async def _served(self) -> list[str]:
        """The model names the server lists (``GET /models``)."""
        page = await self._client().models.list()
        return [str(m.id) for m in page.data]

    async def agenerate(self, request: GenRequest) -> Generation:
        """One request, a coroutine on the backend's loop awaited from the caller's; a failure
        is a ``Generation(error=...)``, as in ``generate``."""
        return await self._loop().wait(self._one(request))

    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        if not requests:
            return []

        async def every() -> list[Generation]:
            return list(await asyncio.gather(*(self._one(r) for r in requests)))

        return self._loop().run(every())

    def close(self) -> None:
        """Close the SDK client's connections and stop its loop (made again on next use)."""
        if self._runner is None:
            return
        if self._sdk is not None:
            self._runner.run(self._sdk.close())
        self._runner.close()
        self._runner, self._sdk, self._slots = None, None, None
