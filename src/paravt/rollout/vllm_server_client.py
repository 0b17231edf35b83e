"""paravt's own HTTP client of a vLLM server, for training in server mode (``vllm_mode=server``).

Why not TRL's ``VLLMClient``: TRL 1.16 reads each logprob of the token-in generate reply as
``{"token": ...}`` (vLLM 0.31's layout) where vLLM 0.32 and later send ``{"token_id": ...}``, and
its weight push needs an NCCL group (CUDA). This client speaks the server's own endpoints, read
from vLLM 0.32's source (``vllm/entrypoints/...``):

- ``POST /inference/v1/generate`` (``--enable-scale-out``): token ids in, token ids and the
  sampled token's logprob out. Frames go as ``content_parts`` (``data:`` URLs, each with a
  ``uuid`` = its content hash, so the server's multimodal cache spares re-processing a frame an
  episode resends every round); the prompt holds one ``<|image_pad|>`` per frame, which the server
  expands itself, and ``return_token_ids`` makes it report the expanded prompt, which the caller
  checks against the learner's stream (``paravt.rollout.vllm_prompt``). ``prompt_logprobs`` gives
  the server's logprob of every prompt token (the weights check,
  ``paravt.rollout.vllm_server``). With ``--enable-prompt-tokens-details`` the reply's usage
  says how many prompt tokens the prefix cache served (``ServerReply.cached_tokens``).
- ``POST /collective_rpc`` (``VLLM_SERVER_DEV_MODE=1``) with ``reload_weights`` and a
  ``weights_path``: the worker reloads its weights in place from a folder
  (``paravt.rollout.weight_push``); then ``POST /reset_prefix_cache``,
  ``/reset_encoder_cache`` and ``/reset_mm_cache`` (see ``reload_weights``).
- ``GET /version``, ``/v1/models``, ``/server_info`` (dev mode): what the server runs, checked
  at start.

Every request goes through the process's one pooled ``httpx`` client
(``paravt.backends.http``), with ``timeout_s`` a request. What a failure becomes:

- the server is away (the connection refused or broken, no answer within ``timeout_s``), or it
  answered a busy or restarting status (``RETRY_STATUS``) ``retries`` more times with waits of
  ``backoff_s`` doubling: ``ServerUnreachable``. The pool of servers
  (``paravt.rollout.vllm_servers``) takes it as an outage of that server: the request goes to
  another server, or waits for one within the run's outage budget;
- any other answer (HTTP 4xx, a malformed reply): ``VLLMServerError`` naming the server, the
  endpoint and what the request was for; the rollout stops with it.

Nothing is turned into an empty completion: no episode is dropped in silence.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx

from paravt.backends.http import healthy, http_client, wait_healthy
from paravt.backends.openai import reported_cached_tokens
from paravt.errors import UserError

__all__ = ["VLLMServerClient", "VLLMServerError"]

logger = logging.getLogger(__name__)


#: answers worth another try: the server is busy, restarting, or behind a proxy that timed out
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class VLLMServerError(UserError):
    """The vLLM server answered a request with an error, or the servers stayed away past the
    run's budget: the message names the server, the endpoint and the request."""


class ServerUnreachable(VLLMServerError):
    """One server is away (module doc): an outage of that server, which the pool of servers
    handles (another server, or a wait); ``server`` is its address, ``answered`` whether it
    answered at all (a busy status past the retries)."""

    def __init__(self, message: str, server: str, *, answered: bool = False):
        super().__init__(message)
        self.server, self.answered = server, answered


@dataclass(frozen=True)
class ServerReply:
    """One generate answer: the prompt the server ran (after its image-pad expansion; None when
    not reported), the sampled ids, the sampled tokens' logprobs, why it stopped, and how many
    prompt tokens its prefix cache served (None unless the server runs with
    ``--enable-prompt-tokens-details``)."""

    prompt_ids: list[int] | None
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str
    cached_tokens: int | None = None


def png_data_url(image: Any) -> tuple[str, str]:
    """``(data URL, content hash)`` of a PIL image, lossless (PNG): the server must see the
    pixels the learner's forward sees."""
    import io

    buf = io.BytesIO()
    image.save(buf, format="PNG")
    data = buf.getvalue()
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii"), hashlib.sha1(
        data
    ).hexdigest()


class VLLMServerClient:
    """One vLLM server at ``base_url`` (``http://HOST:PORT``, no ``/v1``); see the module doc.

    ``timeout_s`` bounds one request, ``retries`` the extra attempts after a failed one (waits
    of ``backoff_s``, doubling), ``max_concurrency`` the generate requests in flight at once (one
    request a prompt: the endpoint takes one prompt at a time)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_s: float = 600.0,
        retries: int = 4,
        backoff_s: float = 1.0,
        max_concurrency: int = 64,
    ):
        self.base_url = base_url.rstrip("/").removesuffix("/v1")
        self.timeout_s = float(timeout_s)
        self.retries = int(retries)
        self.backoff_s = float(backoff_s)
        self.max_concurrency = int(max_concurrency)
        self.requests = 0  # sent, retries included (for tests)
        self.retried = 0

    # -- plain HTTP with retries -------------------------------------------------------------
    def _once(self, method: str, path: str, body: dict | None) -> Any:
        self.requests += 1
        resp = http_client().request(
            method,
            self.base_url + path,
            content=None if body is None else json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json"},
            timeout=self.timeout_s,
        )
        resp.raise_for_status()
        return resp.json() if resp.content.strip() else None

    def call(self, method: str, path: str, body: dict | None = None, *, what: str = "") -> Any:
        """The decoded JSON answer (None for an empty one); failures as the module doc says."""
        t0 = time.monotonic()
        for_what = f" for {what}" if what else ""
        where = f"vLLM server {self.base_url}: {method} {path}{for_what}"
        attempt = 0
        while True:
            try:
                return self._once(method, path, body)
            except httpx.HTTPStatusError as e:
                detail = " ".join(e.response.text.split())[:300]
                why = f"HTTP {e.response.status_code}: {detail}".strip()
                if e.response.status_code not in RETRY_STATUS:
                    raise VLLMServerError(
                        f"{where} was refused ({why}); the run stopped here, no episode was dropped"
                    ) from e
            except (httpx.TransportError, json.JSONDecodeError) as e:
                raise ServerUnreachable(
                    f"{where}: {type(e).__name__}: {e or 'no answer'}", self.base_url
                ) from e
            logger.warning("%s: %s", where, why)
            if attempt >= self.retries:
                raise ServerUnreachable(
                    f"{where}: {why} after {attempt + 1} attempt(s) in "
                    f"{time.monotonic() - t0:.0f} s",
                    self.base_url,
                    answered=True,
                )
            time.sleep(self.backoff_s * 2**attempt)
            attempt += 1
            self.retried += 1

    def healthy(self, timeout_s: float = 5.0) -> bool:
        """``/health`` answers 200 now."""
        return healthy(self.base_url, timeout_s=timeout_s)

    def wait_until_up(self, total_s: float) -> None:
        """Poll ``/health`` until it answers 200, at most ``total_s`` seconds; then
        ``VLLMServerError``."""
        if not wait_healthy(self.base_url, total_s, timeout_s=min(10.0, self.timeout_s)):
            raise VLLMServerError(
                f"vLLM server {self.base_url}: /health did not answer within {total_s:.0f} s "
                "(trainer.vllm_server_timeout); start the server first (docs/train/VLLM.md, "
                "server mode) or fix trainer.vllm_server_base_url / host / port"
            )

    # -- what the server runs ----------------------------------------------------------------
    def version(self) -> str:
        return str(self.call("GET", "/version")["version"])

    def models(self) -> list[dict]:
        return list(self.call("GET", "/v1/models").get("data") or [])

    def server_info(self) -> dict:
        """The server's resolved config (dev mode only: ``VLLM_SERVER_DEV_MODE=1``)."""
        return self.call("GET", "/server_info?config_format=json")["vllm_config"]

    # -- generation --------------------------------------------------------------------------
    def _generate_body(
        self, token_ids: Sequence[int], images: Sequence[tuple[str, str]], sampling: dict
    ) -> dict:
        body: dict = {
            "request_id": f"paravt-{uuid.uuid4().hex}",
            "token_ids": [int(t) for t in token_ids],
            "sampling_params": sampling,
            "return_token_ids": True,
        }
        if images:
            body["content_parts"] = [
                {"type": "image_url", "url": url, "uuid": digest} for url, digest in images
            ]
        return body

    def generate(
        self,
        token_ids: Sequence[int],
        images: Sequence[tuple[str, str]],
        sampling: dict,
        *,
        what: str = "",
    ) -> ServerReply:
        """One prompt (``images``: ``png_data_url`` pairs) → one completion."""
        reply = self.call(
            "POST", "/inference/v1/generate", self._generate_body(token_ids, images, sampling),
            what=what,
        )  # fmt: skip
        try:
            choice = reply["choices"][0]
            ids = [int(t) for t in choice["token_ids"]]
            content = (choice.get("logprobs") or {}).get("content") or []
            lps = [float(c["logprob"]) for c in content]
        except (KeyError, IndexError, TypeError, ValueError) as e:
            raise VLLMServerError(
                f"vLLM server {self.base_url}: malformed generate reply for {what or 'a prompt'} "
                f"({type(e).__name__}: {e}): {str(reply)[:200]}"
            ) from e
        if len(lps) != len(ids):
            lps = lps + [float("nan")] * (len(ids) - len(lps))
        prompt = reply.get("prompt_token_ids")
        return ServerReply(
            prompt_ids=None if prompt is None else [int(t) for t in prompt],
            token_ids=ids,
            logprobs=lps[: len(ids)],
            finish_reason=str(choice.get("finish_reason") or "stop"),
            cached_tokens=reported_cached_tokens(reply),
        )

    def generate_many(
        self, prompts: list[tuple[Sequence[int], Sequence[tuple[str, str]], dict, str]]
    ) -> list[ServerReply]:
        """``generate`` for each ``(token_ids, images, sampling, what)``, concurrently, in
        order; the first failure is raised (after its retries)."""
        if not prompts:
            return []
        workers = max(1, min(self.max_concurrency, len(prompts)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [
                pool.submit(self.generate, ids, ims, sp, what=w) for ids, ims, sp, w in prompts
            ]
            return [f.result() for f in futures]

    def prompt_logprobs(
        self, token_ids: Sequence[int], images: Sequence[tuple[str, str]], *, what: str = ""
    ) -> tuple[list[int], list[float]]:
        """The prompt the server ran (expanded) and its logprob of each of those tokens given the
        ones before (NaN for the first)."""
        sampling = {"max_tokens": 1, "temperature": 1.0, "prompt_logprobs": 0, "logprobs": 0}
        reply = self.call(
            "POST", "/inference/v1/generate", self._generate_body(token_ids, images, sampling),
            what=what,
        )  # fmt: skip
        prompt = [int(t) for t in reply.get("prompt_token_ids") or token_ids]
        out: list[float] = []
        for j, entry in enumerate(reply.get("prompt_logprobs") or []):
            hit = (entry or {}).get(str(prompt[j])) if j < len(prompt) else None
            out.append(float(hit["logprob"]) if hit else float("nan"))
        return prompt, out

    # -- weights -----------------------------------------------------------------------------
    def reload_weights(self, folder: str) -> None:
        """The server's workers reload their weights in place from ``folder`` (safetensors in
        the checkpoint's names), then the caches computed with the old weights are dropped."""
        self.call(
            "POST", "/collective_rpc",
            {"method": "reload_weights", "kwargs": {"weights_path": str(folder)}},
            what=f"reloading the weights from {folder}",
        )  # fmt: skip
        # the worker's reload empties its own encoder cache but not the scheduler's record of
        # it: the next request with a frame seen before would kill the engine ("Encoder cache
        # miss", vLLM 0.32 on CPU); so every cache derived from the old weights is reset here
        for cache in ("prefix", "encoder", "mm"):
            self.call("POST", f"/reset_{cache}_cache", what=f"resetting the {cache} cache")
