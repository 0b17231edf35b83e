"""``openai`` backend: any OpenAI-compatible chat server (vLLM, SGLang, ...), over plain HTTP.

The server applies the model's chat template, so this backend works on messages, not tokens
(``codec`` is ``None``). Frames go as base64 images (``data:`` URLs). Tool results go back as a
``user`` turn holding each result in ``<tool_response>`` tags — what Qwen templates render for a
``tool`` turn, and the only form every OpenAI-compatible server accepts with images — or, with
``tool_role="tool"``, as ``tool`` messages for servers that take images there.

Requests of one ``generate`` call run concurrently (at most ``concurrency`` in flight). A request
that fails with a connection error, a timeout, HTTP 429 or 5xx is retried with exponential
backoff; when retries run out, or on another HTTP error, the ``Generation`` carries ``error`` and
the engine records it as an episode error — a failed request is never scored as an answer.
"""

from __future__ import annotations

import base64
import io
import json
import time
import urllib.error
import urllib.request
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from paravt.agent.config import BackendConfig
from paravt.agent.records import Generation, GenRequest, ImageItem

_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


def budget_frame(item: ImageItem, arch: str | None) -> Any:
    """The frame resized to its pixel budget under ``arch``'s size rule (``None``: unchanged).

    The server's processor would otherwise apply its own, much larger default budget, so the
    model would see other sizes (and many more tokens) than PROTOCOL §2/§3 and the ``hf`` backend
    give it. Antialiased bicubic, as the processors use; the server's own resize then finds the
    size already on its grid and leaves it.
    """
    frame = item.data.detach().to("cpu")
    if arch is None:
        return frame
    from torchvision.transforms.v2 import functional as tvf

    from paravt.kernels import smart_resize
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


class OpenAIBackend:
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
        backoff_s: float = 1.0,
        timeout_s: float = 300.0,
        image_format: str = "jpeg",
        tool_role: str = "user",
        resize_arch: str | None = "qwen3-vl",
    ):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key
        self.concurrency = concurrency
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self.image_format = image_format
        self.tool_role = tool_role
        self.resize_arch = resize_arch
        # data: URL of each image, encoded once: an episode resends its whole context every turn
        # and the generations of one prompt share its overview images (id -> (weakref, url))
        self._urls: dict[int, tuple[weakref.ref, str]] = {}

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
            cfg.api_key,
            cfg.concurrency,
            cfg.retries,
            cfg.backoff_s,
            cfg.timeout_s,
            cfg.image_format,
            cfg.tool_role,
            None if cfg.resize_arch == "none" else cfg.resize_arch,
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
        if req.tools:  # engine.tool_prompt=native: the server's template renders the schema;
            # tool_choice "none" keeps the server from parsing calls itself (paravt parses them)
            body["tools"] = req.tools
            body["tool_choice"] = "none"
        if req.prefill:  # vLLM / SGLang: continue a pre-filled assistant message
            messages.append({"role": "assistant", "content": req.prefill})
            body["continue_final_message"] = True
            body["add_generation_prompt"] = False
        return body

    # -- HTTP --------------------------------------------------------------------------------
    def _post(self, body: dict) -> dict:
        data = json.dumps(body).encode("utf-8")
        request = urllib.request.Request(
            self.url,
            data=data,
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=self.timeout_s) as resp:
            return json.loads(resp.read().decode("utf-8"))

    def _one(self, req: GenRequest) -> Generation:
        try:
            body = self.payload(req)
        except Exception as e:  # noqa: BLE001 - a bad request is this episode's error
            return Generation(
                error=f"cannot build the request: {type(e).__name__}: {e}", finish_reason="error"
            )
        t0 = time.perf_counter()
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * (2 ** (attempt - 1)))
            try:
                reply = self._post(body)
            except urllib.error.HTTPError as e:
                detail = e.read().decode("utf-8", "replace")[:300] if e.fp is not None else ""
                last = f"HTTP {e.code} from {self.url}: {detail}".strip()
                if e.code in _RETRY_STATUS:
                    continue
                break
            except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
                last = f"cannot reach {self.url}: {getattr(e, 'reason', e)}"
                continue
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                last = f"invalid JSON from {self.url}: {e}"
                continue
            gen = self._parse(reply)
            gen.generate_s = time.perf_counter() - t0
            return gen
        return Generation(
            error=f"{last} (after {self.retries + 1} attempts)",
            finish_reason="error",
            generate_s=time.perf_counter() - t0,
        )

    def _parse(self, reply: dict) -> Generation:
        try:
            choice = reply["choices"][0]
            msg = choice.get("message") or {}
            text = msg.get("content") or ""
            reasoning = msg.get("reasoning_content") or msg.get("reasoning")
            if reasoning and "<think>" not in text:
                text = f"<think>\n{reasoning}\n</think>\n{text}"
            finish = choice.get("finish_reason") or "stop"
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
        )

    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        if not requests:
            return []
        workers = max(1, min(self.concurrency, len(requests)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(self._one, requests))
