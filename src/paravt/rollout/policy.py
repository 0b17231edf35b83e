"""The policy being trained, as a token-in/token-out backend of the episode engine.

The engine sends ``GenRequest``s whose ``tokens`` (a ``TokenPrompt``) already hold the whole
context (image pads expanded, think prefix included) with ``pixel_values``/``image_grid_thw`` for
every image of it. This backend left-pads them, samples all of them in one ``generate`` call per
(budget, sampling) group, and returns the generated ids (stop token included) so the trainer can
concatenate the episode's stream exactly as sampled — no re-rendering, no re-tokenizing
(docs/PROTOCOL.md §7).

``first_turn_text`` forces the main agent's first turn (a completion prefix for smoke tests with
random weights: the forced text carries real ``crop_video`` calls, later turns are sampled).

With sharded weights (FSDP, ZeRO-3 without the rollout's gather) each forward is a collective, so
the backend samples in lockstep with the other ranks (``lockstep``: ``paravt.rollout.lockstep``) and
the trainer calls ``drain`` once its own episodes are done.

Serves the engine's needs: token ids (``codec`` set); logprobs of the sampled tokens
(``with_logprobs``, the trainer's ``sampling_logprobs``); pixel rows (``reads_image_pixels``:
each image's own rows, joined once per batch, never once per episode).

Prefill once per episode (``engine.reuse_cache``, as the ``hf`` backend: ``backends.cached_decode``)
wherever the weights are local while sampling: one process, DDP, and ZeRO-3 with TRL's
``ds3_gather_for_generation`` (its default). Each episode's KV cache and image features stay on
its rank between turns, and a turn prefills only what is new. Under lockstep (FSDP, ZeRO-3
without the gather) nothing carries over: every forward must run on every rank the same number
of times, but a kept state makes the number of decode steps and whether a batch runs the vision
tower (new frames or none) depend on the rank's own episodes, so every turn prefills in full
through ``generate(synced_gpus=...)`` as before.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import torch

from paravt.agent.backend import BackendBase
from paravt.agent.chat import ChatCodec
from paravt.backends import cached_decode as cd
from paravt.backends.episode_state import EpisodeStates
from paravt.backends.hf import cut_at_stop, left_pad
from paravt.rollout.lockstep import Lockstep, filler_image
from paravt.rollout.streams import mm_token_type_ids
from paravt.schema.episodes import Generation, GenRequest, TokenPrompt

__all__ = ["PolicyBackend", "TokenSampler"]

logger = logging.getLogger(__name__)

VISION_TOKENS = ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")


def vision_token_ids(tokenizer) -> list[int]:
    ids = []
    for tok in VISION_TOKENS:
        tid = tokenizer.convert_tokens_to_ids(tok)
        if isinstance(tid, int) and tid != tokenizer.unk_token_id and tid >= 0:
            ids.append(tid)
    return ids


class TokenSampler(BackendBase):
    """What every token-in/token-out training backend shares, whatever samples the tokens.

    The policy itself (``PolicyBackend``) and a vLLM engine (``paravt.rollout.vllm``) must
    treat requests the same way, or the two rollouts would differ in more than the sampler: the
    same stop tokens, the same forced first turn, the same grouping of requests into calls (one
    budget and sampling setting per call) and the same cut of a sampled row into a turn.
    """

    token_space = True
    #: a token sampler always works in token space: its codec is set in ``__init__``
    codec: ChatCodec
    #: logprob recorded for the tokens of a forced turn (not sampled by anyone)
    forced_logprob = 0.0

    def __init__(
        self,
        processing_class: Any,
        *,
        eos_token_ids: list[int] | None = None,
        suppress_vision_tokens: bool = True,
        first_turn_text: str | None = None,
    ):
        self.processing_class = processing_class
        self.tokenizer = getattr(processing_class, "tokenizer", processing_class)
        tok = self.tokenizer
        eos = list(eos_token_ids or [])
        for name in ("<|im_end|>", tok.eos_token):
            tid = tok.convert_tokens_to_ids(name) if name else None
            if isinstance(tid, int) and tid >= 0 and tid not in eos and tid != tok.unk_token_id:
                eos.append(tid)
        self.eos_token_ids = eos
        self.pad_token_id = tok.pad_token_id if tok.pad_token_id is not None else eos[0]
        self.image_pad_id = tok.convert_tokens_to_ids("<|image_pad|>")
        self.suppress_ids = vision_token_ids(tok) if suppress_vision_tokens else []
        self.first_turn_text = first_turn_text
        self.calls = 0  # generate() calls, for tests and benchmarks

        self.codec = ChatCodec(processing_class)  # token space: the engine renders prompts with it

    # -- helpers -------------------------------------------------------------------------
    def _decode(self, ids: list[int]) -> str:
        text = self.tokenizer.decode(ids, skip_special_tokens=False)
        for tid in set(self.eos_token_ids) | {self.pad_token_id}:
            piece = self.tokenizer.convert_ids_to_tokens(tid)
            if piece and text.endswith(piece):
                text = text[: -len(piece)]
        return text

    def _forced(self, req: GenRequest) -> Generation:
        text = self.first_turn_text or ""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [self.eos_token_ids[0]]
        return Generation(
            text=text,
            token_ids=ids,
            logprobs=[self.forced_logprob] * len(ids),
            finish_reason="stop",
            prompt_tokens=_prompt_len(req),
            completion_tokens=len(ids),
        )

    def triage(
        self, requests: list[GenRequest]
    ) -> tuple[list[Generation | None], dict[tuple[int, float, float], list[int]]]:
        """Answers known without sampling (bad request, forced first turn), and the indices of the
        rest grouped by ``(max_new_tokens, temperature, top_p)`` — one sampling call per group."""
        out: list[Generation | None] = [None] * len(requests)
        groups: dict[tuple[int, float, float], list[int]] = {}
        for i, req in enumerate(requests):
            if req.tokens is None:
                out[i] = Generation(
                    error="policy backend needs token-space requests (tokens)",
                    finish_reason="error",
                )
            elif self.first_turn_text and req.role == "main" and req.turn == 0 and not req.forced:
                out[i] = self._forced(req)
            else:
                key = (int(req.max_new_tokens), float(req.temperature), float(req.top_p))
                groups.setdefault(key, []).append(i)
        return out, groups

    def turn_of(
        self,
        req: GenRequest,
        row: list[int],
        logprobs: list[float] | None,
        max_new: int,
        generate_s: float = 0.0,
    ) -> Generation:
        """One sampled row as a turn: up to and including its first stop token.

        A vision token is never valid in a generated turn (the next round would misplace the
        frames): a sampler that could not suppress it has the row end just before it, as if the
        budget ran out. A row without a stop token that is shorter than the budget was ended by
        the sampler without echoing its stop token: ``stop``, and the engine closes the turn.
        """
        ids, finish = cut_at_stop(list(row), set(self.eos_token_ids))
        banned = set(self.suppress_ids)
        at = next((j for j, t in enumerate(ids) if t in banned), None)
        if at is not None:
            ids, finish = ids[:at], "length"
        elif finish == "length" and len(ids) < max_new:
            finish = "stop"
        n = len(ids)
        lp = list(logprobs[:n]) if logprobs is not None else [0.0] * n
        return Generation(
            text=self._decode(ids),
            token_ids=ids,
            logprobs=lp,
            finish_reason=finish,  # type: ignore[arg-type]
            prompt_tokens=_prompt_len(req),
            completion_tokens=n,
            generate_s=generate_s,
        )


def _prompt_len(req: GenRequest) -> int:
    """The ids of ``req``'s token-space prompt (0 without one)."""
    return len(req.tokens.ids) if req.tokens is not None else 0


def _own_rows(req: GenRequest) -> Any:
    """``req``'s own joined ``pixel_values`` (``TokenPrompt``), None when it has none."""
    return req.tokens.pixel_values if req.tokens is not None else None


def _request_rows(reqs: list[GenRequest]) -> Any:
    """Every request's pixel rows in order as one tensor (None without any): a request's own
    ``pixel_values`` where it has them, else its images' rows, joined once for the batch."""
    parts: list = []
    for r in reqs:
        own = _own_rows(r)
        if own is not None:
            if len(own):
                parts.append(own)
        else:
            parts.extend(it.pixels for it in (r.images or []) if it.pixels is not None)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=0)


class PolicyBackend(TokenSampler):
    """Batched sampling from the (unwrapped) policy model; see the module docstring."""

    def __init__(
        self,
        model: Any,
        processing_class: Any,
        *,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = 0,
        eos_token_ids: list[int] | None = None,
        suppress_vision_tokens: bool = True,
        first_turn_text: str | None = None,
        batch_size: int = 64,
        with_logprobs: bool = False,
        synced_gpus: bool | None = False,
        lockstep: Lockstep | None = None,
    ):
        super().__init__(
            processing_class,
            eos_token_ids=eos_token_ids,
            suppress_vision_tokens=suppress_vision_tokens,
            first_turn_text=first_turn_text,
        )
        self.model = model
        # False: the weights are local for generation (one process, DDP, ZeRO-3 gathered for the
        # rollout), so no rank waits on another. None lets transformers decide (it turns syncing on
        # whenever ZeRO-3 or FSDP is active — with gathered weights that only adds a per-token
        # all-reduce, and ranks whose episodes need different numbers of rounds would hang).
        self.synced_gpus = synced_gpus
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.batch_size = batch_size
        self.with_logprobs = with_logprobs
        # the engine leaves each image's rows on its ImageItem: a batch's pixel_values is joined
        # here once, from the requests' images, instead of once per episode and again per batch
        self.reads_image_pixels = True
        # collective forwards: every rank samples the same groups, batches and images (module doc)
        self.lockstep = lockstep
        self.filler_batches = 0  # batches or rows sampled only to keep in step, for tests
        self._filler: tuple | None = None
        #: each running episode's KV cache and image features (``keep_episode_state``)
        self.states: EpisodeStates | None = None

    # -- kept episode state (engine.reuse_cache) ------------------------------------------------
    def keep_episode_state(self, budget_bytes: int) -> None:
        """Keep each episode's state between its turns where the weights are local (module doc)."""
        self.states = None
        if budget_bytes <= 0:
            return
        if self.lockstep is not None or self.synced_gpus is not False:
            logger.info(
                "the rollout's forwards are collective (FSDP, or ZeRO-3 without "
                "ds3_gather_for_generation): every turn prefills in full"
            )
        elif not cd.supports_reuse(self.model):
            logger.info("%s keeps no episode state between turns", type(self.model).__name__)
        else:
            self.states = EpisodeStates(budget_bytes)

    def end_episodes(self, episode_ids: list[str]) -> None:
        if self.states is not None:
            self.states.end(episode_ids)

    def _device(self):
        try:
            return next(self.model.parameters()).device
        except StopIteration:  # pragma: no cover
            return torch.device("cpu")

    # -- the backend protocol ------------------------------------------------------------
    def generate(self, requests: list[GenRequest]) -> list[Generation]:
        self.calls += 1
        out, groups = self.triage(requests)
        if self.lockstep is not None:
            shares = {
                key: (len(idx), any(_has_images(requests[i]) for i in idx))
                for key, idx in groups.items()
            }
            plan, _ = self.lockstep.tick(shares, running=True)
        else:
            plan = {key: (len(idx), False) for key, idx in groups.items()}
        for key in sorted(plan):
            most, images = plan[key]
            idx = groups.get(key, [])
            # under lockstep ``most`` is the largest group of any rank: as many batches everywhere
            for s in range(0, most, self.batch_size):
                chunk = idx[s : s + self.batch_size]
                gens = self._sample([requests[i] for i in chunk], *key, images=images)
                for i, gen in zip(chunk, gens, strict=True):
                    out[i] = gen
        return out  # type: ignore[return-value]

    def drain(self) -> None:
        """Join every sampling batch the other ranks still run, with fillers only, until no rank
        has a running episode (a no-op without lockstep)."""
        if self.lockstep is None:
            return
        while True:
            plan, running = self.lockstep.tick({}, running=False)
            for key in sorted(plan):
                most, images = plan[key]
                for _ in range(0, most, self.batch_size):
                    self._sample([], *key, images=images)
            if not running:
                return

    def _fillers(self, reqs: list[GenRequest], images: bool) -> list[GenRequest]:
        """Rows sampled only so this rank runs what the others run: one when the batch is empty,
        and one with an image when the batch has none but another rank's has (the vision tower)."""
        if self.lockstep is None or (reqs and (not images or any(map(_has_images, reqs)))):
            return []
        ids, pixels, grid = [self.pad_token_id], None, None
        if images:
            if self._filler is None:
                self._filler = filler_image(self.codec, self.tokenizer)
            ids, pixels, grid = self._filler
        return [
            GenRequest(
                "filler",
                0,
                "main",
                [],
                [],
                1,
                tokens=TokenPrompt(ids, pixels, grid),
            )
        ]

    @torch.no_grad()
    def _sample(
        self,
        reqs: list[GenRequest],
        max_new: int,
        temperature: float,
        top_p: float,
        images: bool = False,
    ) -> list[Generation]:
        """One ``generate`` call for ``reqs`` (plus the lockstep's fillers, whose rows are
        dropped); ``images``: whether another rank's batch of this call holds images."""
        if self.states is not None and reqs:
            return self._sample_reusing(reqs, max_new, temperature, top_p)
        real = len(reqs)
        fillers = self._fillers(reqs, images)
        self.filler_batches += len(fillers)
        reqs = [*reqs, *fillers]
        device = self._device()
        t0 = time.perf_counter()
        input_ids, attention = left_pad(
            [list(r.require_tokens().ids) for r in reqs], self.pad_token_id
        )
        width = input_ids.shape[1]
        kwargs: dict[str, Any] = {
            "input_ids": input_ids.to(device),
            "attention_mask": attention.to(device),
        }
        pix = _request_rows(reqs)
        if pix is not None:
            kwargs["pixel_values"] = pix.to(device)
            grids = [r.require_tokens().image_grid_thw for r in reqs]
            kwargs["image_grid_thw"] = torch.cat(
                [torch.as_tensor(g).to(device) for g in grids if g is not None and len(g)], dim=0
            )
            kwargs["mm_token_type_ids"] = mm_token_type_ids(kwargs["input_ids"], self.image_pad_id)
        gen_kwargs = self._gen_kwargs(max_new, temperature, top_p)
        gen_kwargs.update(
            return_dict_in_generate=True,
            output_scores=self.with_logprobs,
            synced_gpus=self.synced_gpus,
        )
        result = self.model.generate(**kwargs, **gen_kwargs, disable_compile=True)
        seqs = result.sequences[:, width:].cpu()
        logps = None
        if self.with_logprobs and result.scores:
            scores = torch.stack(result.scores, dim=1).float().log_softmax(-1).cpu()
            logps = scores.gather(-1, seqs[:, : scores.size(1)].unsqueeze(-1)).squeeze(-1)
        dt = (time.perf_counter() - t0) / len(reqs)
        gens = []
        for b, r in enumerate(reqs[:real]):
            lp = logps[b].tolist() if logps is not None else None
            gens.append(self.turn_of(r, seqs[b].tolist(), lp, max_new, dt))
        return gens

    def _gen_kwargs(self, max_new: int, temperature: float, top_p: float) -> dict:
        """The sampling settings of one call: the trainer's, whatever the model folder says."""
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_new,
            "do_sample": temperature > 0,
            "pad_token_id": self.pad_token_id,
            "eos_token_id": self.eos_token_ids,
        }
        if temperature > 0:  # top_k 0 = off, as in TRL
            kwargs.update(temperature=temperature, top_p=top_p, top_k=int(self.top_k))
        if self.suppress_ids:
            kwargs["suppress_tokens"] = self.suppress_ids
        return kwargs

    def _sample_reusing(
        self, reqs: list[GenRequest], max_new: int, temperature: float, top_p: float
    ) -> list[Generation]:
        """``_sample`` from the episodes' kept states (``backends.cached_decode``): the same
        tokens under the same rules, prefilling only what each state does not cover. A failure
        drops the states of the batch's episodes and is raised, as ``generate``'s is."""
        states, device = self.states, self._device()
        if states is None:
            raise RuntimeError("episode states are kept only with keep_episode_state()")
        t0 = time.perf_counter()
        try:
            rows = [cd.plan_row(self.model, self.codec, states, r) for r in reqs]
            dtype = next(self.model.parameters()).dtype
            mm = cd.encoder_outputs(self.model, states, rows, device, dtype)
            batch = cd.build_batch(rows, self.pad_token_id, device)
            seqs, logps = cd.decode(
                self.model,
                batch,
                mm,
                self._gen_kwargs(max_new, temperature, top_p),
                self.eos_token_ids,
                self.pad_token_id,
                logprobs="scores" if self.with_logprobs else None,
            )
        except Exception:
            states.end([r.state_key for r in reqs])
            raise
        cd.count(states, rows)
        seqs = seqs.cpu()
        logps = logps.cpu() if logps is not None else None
        dt = (time.perf_counter() - t0) / len(reqs)
        gens = []
        for b, (r, row) in enumerate(zip(reqs, rows, strict=True)):
            lp = logps[b].tolist() if logps is not None else None
            gen = self.turn_of(r, seqs[b].tolist(), lp, max_new, dt)
            gen.cached_tokens = row.cached
            gens.append(gen)
        cd.keep_states(states, rows, batch, [g.token_ids or [] for g in gens])
        return gens


def _has_images(req: GenRequest) -> bool:
    """Whether ``req`` brings pixel rows: its own ``pixel_values``, or its images' rows (the
    engine leaves them there for this backend: ``reads_image_pixels``)."""
    own = _own_rows(req)
    if own is not None:
        return len(own) > 0
    return any(it.pixels is not None for it in (req.images or []))
