"""``hf`` backend: a local transformers Qwen-VL model, batched ``generate``, token in / token out.

The engine hands over ``tokens.ids`` (the whole context, image pads expanded) and the matching
images with their preprocessed rows (every frame as an image — the layout the training loss also
uses); each distinct image of a batch is encoded once (``backends.shared_vision``). Requests are grouped by sampling settings and run ``batch_size`` at a time, left-padded;
``mm_token_type_ids`` is derived from the ids so multimodal RoPE is computed correctly. Vision
tokens are suppressed during sampling (a stray ``<|image_pad|>`` would break the next round), and
generation stops at the chat's end-of-turn token, which is kept in ``token_ids``.

Serves the engine's needs: token ids (``codec`` set: prompt ids in, generated ids out);
logprobs when built with ``logprobs=True``; pixel rows (``reads_image_pixels`` when the model
takes pre-computed vision features: each image's own rows, encoded once per batch; otherwise the
requests' joined ``pixel_values``), in the model's dtype, on its device.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from paravt.agent.backend import BackendBase
from paravt.agent.chat import ChatCodec
from paravt.agent.config import BackendConfig
from paravt.backends.cached_decode import (
    Row,
    build_batch,
    count,
    decode,
    encoder_outputs,
    keep_states,
    plan_row,
    supports_reuse,
)
from paravt.backends.episode_state import EpisodeStates
from paravt.backends.shared_vision import shared_image_inputs, supports_shared_features
from paravt.errors import UserError
from paravt.schema.episodes import Generation, GenRequest, TokenPrompt, join_rows

__all__ = ["HFBackend", "cut_at_stop", "left_pad"]

logger = logging.getLogger(__name__)


def _resolve_device(device: str) -> str:
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _resolve_dtype(dtype: str, device: str) -> Any:
    import torch

    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return {
            "bf16": torch.bfloat16,
            "bfloat16": torch.bfloat16,
            "fp16": torch.float16,
            "float16": torch.float16,
            "fp32": torch.float32,
            "float32": torch.float32,
        }[dtype]
    except KeyError:
        raise UserError(f"dtype {dtype!r}: choose auto, bf16, fp16 or fp32") from None


def left_pad(prompts: list[list[int]], pad_id: int) -> tuple[Any, Any]:
    """Prompts of different lengths as one batch: ``(input_ids, attention_mask)``, ``[B, width]``.

    Padding goes on the left so every prompt ends in the last column, where generation starts
    (the trainer's policy backend batches its prompts the same way).
    """
    import torch

    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, p in enumerate(prompts):
        if p:
            ids[i, width - len(p) :] = torch.tensor(p, dtype=torch.long)
            mask[i, width - len(p) :] = 1
    return ids, mask


def mm_token_types(ids: Any, mask: Any, image_token_id: int, video_token_id: int) -> Any:
    """Qwen-VL's ``mm_token_type_ids`` (0 text, 1 image, 2 video) derived from the ids, so
    multimodal RoPE places each vision token; padding is text."""
    import torch

    mm = torch.zeros_like(ids, dtype=torch.int32)
    mm[(ids == image_token_id) & (mask == 1)] = 1
    mm[(ids == video_token_id) & (mask == 1)] = 2
    return mm


def cut_at_stop(row: list[int], stop_ids: set[int]) -> tuple[list[int], str]:
    """A generated row up to and including its first stop token: ``(ids, "stop")``; a row without
    one (it ran out of new tokens) comes back whole with ``"length"``."""
    for j, t in enumerate(row):
        if t in stop_ids:
            return row[: j + 1], "stop"
    return row, "length"


class HFBackend(BackendBase):
    """Generate with a loaded ``(model, processor)`` pair."""

    name = "hf"

    def __init__(
        self,
        model: Any,
        processor: Any,
        batch_size: int = 8,
        logprobs: bool = False,
        preprocess_device: str = "auto",
    ):
        self.model = model
        self.processor = processor
        self.codec: ChatCodec = ChatCodec(processor)  # always set: hf works in token space
        self.batch_size = batch_size
        self.logprobs = logprobs
        # the engine builds pixel_values in the model's dtype; on a GPU model also on its device
        # (the kernels run as Triton there), unless preprocess_device says otherwise
        self.pixel_dtype = next(model.parameters()).dtype
        if preprocess_device == "auto":
            self.pixel_device = model.device if model.device.type == "cuda" else None
        else:
            self.pixel_device = None if preprocess_device == "cpu" else preprocess_device
        # the engine leaves each image's rows on its ImageItem (no per-episode joined copy) when
        # the model can take one encoding per distinct image (backends.shared_vision)
        self.reads_image_pixels = supports_shared_features(model)
        self.last_distinct_images = 0  # distinct images encoded by the last batch (for tests)
        #: each running episode's KV cache and image features (``keep_episode_state``)
        self.states: EpisodeStates | None = None

    @classmethod
    def from_pretrained(
        cls,
        model_id: str,
        device: str = "auto",
        dtype: str = "auto",
        batch_size: int = 8,
        attn_implementation: str | None = None,
        preprocess_device: str = "auto",
    ) -> HFBackend:
        """Load a model folder or Hub id (downloaded by transformers on first use)."""
        from pathlib import Path

        from transformers import AutoModelForImageTextToText, AutoProcessor

        if (
            model_id.startswith(("/", "./", "../", "~"))
            and not Path(model_id).expanduser().is_dir()
        ):
            raise UserError(
                f"model folder not found: {model_id} (pass an existing folder or a Hub id)"
            )
        model_id = str(Path(model_id).expanduser()) if model_id.startswith("~") else model_id
        dev = _resolve_device(device)
        kwargs: dict = {"dtype": _resolve_dtype(dtype, dev)}
        if attn_implementation:
            kwargs["attn_implementation"] = attn_implementation
        try:
            processor = AutoProcessor.from_pretrained(model_id)
            model = AutoModelForImageTextToText.from_pretrained(model_id, **kwargs)
        except OSError as e:
            raise UserError(
                f"cannot load model {model_id!r}: {str(e).splitlines()[0]} "
                "(pass --model with a local model folder or a reachable Hub id)"
            ) from e
        # transformers wraps ``PreTrainedModel.to`` with functools.wraps, whose stub pyright reads
        # as an unbound function (a ``self`` argument missing): a false report, the call is right
        model.to(dev).eval()  # pyright: ignore[reportArgumentType]
        return cls(model, processor, batch_size=batch_size, preprocess_device=preprocess_device)

    @classmethod
    def from_config(cls, cfg: BackendConfig) -> HFBackend:
        return cls.from_pretrained(
            cfg.model,
            cfg.device,
            cfg.dtype,
            cfg.batch_size,
            cfg.attn_implementation,
            cfg.preprocess_device,
        )

    # -- kept episode state (engine.reuse_cache) ------------------------------------------------
    def keep_episode_state(self, budget_bytes: int) -> None:
        """Keep each episode's KV cache and image features between its turns, in at most
        ``budget_bytes`` (0: keep nothing; every turn prefills in full through ``generate``)."""
        self.states = None
        if budget_bytes <= 0:
            return
        if not (self.reads_image_pixels and supports_reuse(self.model)):
            logger.info(
                "%s keeps no episode state between turns (it needs a Qwen-VL that takes image "
                "features and has full attention in every layer): every turn prefills in full",
                type(self.model).__name__,
            )
            return
        self.states = EpisodeStates(budget_bytes)

    def end_episodes(self, episode_ids: list[str]) -> None:
        if self.states is not None:
            self.states.end(episode_ids)

    # -- generation --------------------------------------------------------------------------
    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        out: list[Generation | None] = [None] * len(requests)
        groups: dict[tuple, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault((r.max_new_tokens, r.temperature, r.top_p), []).append(i)
        for idx in groups.values():
            for k in range(0, len(idx), self.batch_size):
                chunk = idx[k : k + self.batch_size]
                gens = self._batch([requests[i] for i in chunk])
                for i, g in zip(chunk, gens, strict=True):
                    out[i] = g
        return out  # type: ignore[return-value]

    @staticmethod
    def _pixels_of(r: GenRequest) -> Any:
        """One request's rows: its ``pixel_values``, else its images' rows joined."""
        pv = r.require_tokens().pixel_values
        return pv if pv is not None else join_rows(r.images)

    def _gen_kwargs(self, first: GenRequest) -> dict:
        """The sampling settings of a batch (its requests share them: ``generate`` groups)."""
        codec = self.codec
        kwargs: dict = {
            "max_new_tokens": first.max_new_tokens,
            "do_sample": first.temperature > 0,
            "eos_token_id": codec.stop_ids,
            "pad_token_id": codec.pad_token_id,
            "suppress_tokens": codec.vision_ids or None,
        }
        if first.temperature > 0:
            kwargs.update(temperature=first.temperature, top_p=first.top_p)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        return kwargs

    @staticmethod
    def _failed(reqs: list[GenRequest], e: Exception) -> list[Generation]:
        logger.warning(
            "generation failed for a batch of %d (%s)",
            len(reqs),
            ", ".join(r.key for r in reqs),
            exc_info=e,
        )
        msg = f"{type(e).__name__}: {e}"
        return [Generation(error=msg, finish_reason="error") for _ in reqs]

    def _batch(self, reqs: list[GenRequest]) -> list[Generation]:
        if self.states is not None:
            return self._batch_reusing(reqs)
        import torch

        codec = self.codec
        t0 = time.perf_counter()
        try:
            prompts: list[TokenPrompt] = []
            for r in reqs:
                if r.tokens is None:
                    raise ValueError(
                        "the hf backend needs token-space requests (run it through EpisodeEngine)"
                    )
                prompts.append(r.tokens)
            device = self.model.device
            ids, mask = left_pad([p.ids for p in prompts], codec.pad_token_id)
            width = ids.shape[1]
            mm = mm_token_types(ids, mask, codec.image_token_id, codec.video_token_id)
            kwargs: dict = {
                "input_ids": ids.to(device),
                "attention_mask": mask.to(device),
                "mm_token_type_ids": mm.to(device),
            }
            shared, encode_s = None, 0.0
            if self.reads_image_pixels:  # the vision tower's time counts as generation's
                t_enc = time.perf_counter()
                with torch.no_grad():
                    shared = shared_image_inputs(self.model, reqs, device, self.pixel_dtype)
                encode_s = time.perf_counter() - t_enc
            if shared is not None:  # each distinct image encoded once (backends.shared_vision)
                mm_outputs, grid, self.last_distinct_images = shared
                kwargs["mm_encoder_outputs"], kwargs["image_grid_thw"] = mm_outputs, grid
            elif any(r.images for r in reqs):
                parts = [self._pixels_of(r) for r in reqs if r.images]
                kwargs["pixel_values"] = torch.cat(parts).to(device=device, dtype=self.pixel_dtype)
                kwargs["image_grid_thw"] = torch.cat(
                    [p.image_grid_thw for p in prompts if p.image_grid_thw is not None]
                ).to(device)
            gen_kwargs = self._gen_kwargs(reqs[0])
            gen_kwargs.update(return_dict_in_generate=True, output_logits=self.logprobs)
            prep = time.perf_counter() - t0 - encode_s
            t1 = time.perf_counter()
            with torch.no_grad():
                res = self.model.generate(**kwargs, **gen_kwargs)
            spent = time.perf_counter() - t1 + encode_s
        except Exception as e:  # noqa: BLE001 - one failed batch is an error in each of its records
            return self._failed(reqs, e)
        seqs = res.sequences[:, width:].cpu()
        logprobs = None
        if self.logprobs and res.logits:
            steps = torch.stack(res.logits, dim=1).float()  # [B, steps, V]
            if reqs[0].temperature > 0:
                steps = steps / reqs[0].temperature
            lp = torch.log_softmax(steps, dim=-1)
            logprobs = lp.gather(-1, seqs[:, : lp.shape[1]].unsqueeze(-1).to(lp.device))
            logprobs = logprobs.squeeze(-1).cpu()
        return self._generations(reqs, seqs, logprobs, prep, spent)

    def _generations(
        self,
        reqs: list[GenRequest],
        seqs: Any,
        logprobs: Any,
        prep: float,
        spent: float,
        cached: list[int] | None = None,
    ) -> list[Generation]:
        """One ``Generation`` per row of ``seqs`` (``[B, steps]`` generated ids), cut at its stop
        token, with its tokens' ``logprobs`` (``[B, steps]``) when there are some."""
        out = []
        stops = set(self.codec.stop_ids)
        for i, r in enumerate(reqs):
            gen_ids, finish = cut_at_stop(seqs[i].tolist(), stops)
            n = len(gen_ids)
            body = gen_ids[:-1] if finish == "stop" else gen_ids
            out.append(
                Generation(
                    text=self.codec.decode(body),
                    token_ids=gen_ids,
                    logprobs=logprobs[i, :n].tolist() if logprobs is not None else None,
                    finish_reason=finish,  # type: ignore[arg-type]
                    prompt_tokens=len(r.require_tokens().ids),
                    completion_tokens=len(gen_ids),
                    cached_tokens=cached[i] if cached is not None else None,
                    preprocess_s=prep / len(reqs),
                    generate_s=spent / len(reqs),
                )
            )
        return out

    # -- generation from kept states (backends.cached_decode) ---------------------------------
    def _batch_reusing(self, reqs: list[GenRequest]) -> list[Generation]:
        """Like ``_batch``, prefilling only what each episode's kept state does not cover. A
        request that cannot be planned fails alone, and drops its episode's state."""
        t0 = time.perf_counter()
        out: list[Generation | None] = [None] * len(reqs)
        planned: list[tuple[int, Row]] = []
        states = self._kept_states()
        for i, r in enumerate(reqs):
            try:
                planned.append((i, self._plan(r)))
            except Exception as e:  # noqa: BLE001 - one request's trouble is its error alone
                states.end([r.state_key])
                out[i] = self._failed([r], e)[0]
        if planned:
            gens = self._run_rows([row for _, row in planned], t0)
            for (i, _), g in zip(planned, gens, strict=True):
                out[i] = g
        return out  # type: ignore[return-value]

    def _kept_states(self) -> EpisodeStates:
        """The kept episode states; only ``_batch_reusing`` runs, once they are switched on."""
        if self.states is None:
            raise RuntimeError("episode states are off: call keep_episode_state first")
        return self.states

    def _plan(self, req: GenRequest) -> Row:
        return plan_row(self.model, self.codec, self._kept_states(), req)

    def _run_rows(self, rows: list[Row], t0: float) -> list[Generation]:
        import torch

        codec, states = self.codec, self._kept_states()
        reqs = [row.req for row in rows]
        try:
            device = self.model.device
            with torch.no_grad():
                t_enc = time.perf_counter()
                encoded = states.stats.encoded_images
                mm = encoder_outputs(self.model, states, rows, device, self.pixel_dtype)
                self.last_distinct_images = states.stats.encoded_images - encoded
                encode_s = time.perf_counter() - t_enc
                batch = build_batch(rows, codec.pad_token_id, device)
                prep = time.perf_counter() - t0 - encode_s
                t1 = time.perf_counter()
                seqs, logprobs = decode(
                    self.model,
                    batch,
                    mm,
                    self._gen_kwargs(reqs[0]),
                    codec.stop_ids,
                    codec.pad_token_id,
                    logprobs="raw" if self.logprobs else None,
                )
                spent = time.perf_counter() - t1 + encode_s
        except Exception as e:  # noqa: BLE001 - one failed batch is an error in each of its records
            states.end([r.state_key for r in reqs])
            return self._failed(reqs, e)
        count(states, rows)
        cached = [row.cached for row in rows]
        lp = logprobs.cpu() if logprobs is not None else None
        gens = self._generations(reqs, seqs.cpu(), lp, prep, spent, cached)
        with torch.no_grad():
            keep_states(states, rows, batch, [g.token_ids or [] for g in gens])
        return gens
