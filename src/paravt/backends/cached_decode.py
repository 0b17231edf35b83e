"""Generate for a batch of episodes from their kept states: prefill only what is new, then decode.

Why not ``model.generate``: continuing from a cache with new images in the uncached part goes
through private, version-specific paths of transformers (which tokens it slices, where the
mRoPE deltas live, which multimodal inputs it drops after the first step; 5.19 and 5.24 differ),
and rows that continue caches of different lengths cannot share its one left-padded input. This
module drives the model's ``forward`` itself, and borrows ``generate``'s own logits processors so
that a turn's tokens are chosen under the same rules (``logits_processors``).

The batching design: right-aligned caches. Row ``i`` of a batch has ``P_i`` kept tokens and ``S_i``
new ones (a first turn, or a state that missed, has ``P_i = 0`` and its whole prompt new). The
batch's cache is ``Pmax`` columns wide with row ``i``'s kept keys/values in its last ``P_i``
columns; the new tokens are ``Smax`` columns, right-aligned too; the attention mask marks only
real columns, so one prefill forward and one decode loop serve rows of any lengths, and rows that
stop early are padded on, as ``generate`` pads them. Positions are explicit: a row's 3-D mRoPE
positions are ``get_rope_index`` over its whole sequence (what a full prefill computes, so the new
suffix continues exactly where the kept tokens end, whatever images either holds), and decode
steps go on from the row's max position + 1. After the loop each continuing row's real columns
are copied out into a compact ``EpisodeState`` again (``keep_states``): the batch's cache and the
kept ones coexist for that moment, so a turn's peak is about twice its KV cache.
"""

from __future__ import annotations

import inspect
import logging
from dataclasses import dataclass
from typing import Any

from paravt.backends.episode_state import EpisodeState, EpisodeStates
from paravt.backends.shared_vision import image_key, supports_shared_features
from paravt.schema.episodes import GenRequest, ImageItem, join_rows

__all__: list[str] = []  # nothing here is for the other rooms

logger = logging.getLogger(__name__)


def supports_reuse(model: Any) -> bool:
    """Whether ``model`` can continue kept states here: a Qwen-VL whose ``generate`` takes image
    features, with ``get_rope_index`` and full attention in every layer (no sliding windows)."""
    inner = getattr(model, "model", None)
    if not supports_shared_features(model) or not hasattr(inner, "get_rope_index"):
        return False
    text = model.config.get_text_config(decoder=True)
    types = getattr(text, "layer_types", None) or ["full_attention"]
    return all(t == "full_attention" for t in types) and not getattr(
        text, "use_sliding_window", False
    )


def _cache_kwarg(model: Any) -> str:
    """The forward's name for the cache: ``cache`` from transformers 5.24, ``past_key_values``
    before (5.24 still maps the old name, with a deprecation warning)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


@dataclass
class Row:
    """One request of a batch, planned: what is kept, what is new, where it sits."""

    req: GenRequest
    state: EpisodeState | None
    cached: int  # P: tokens served from the kept state
    new_ids: list[int]  # S tokens to prefill
    new_images: list[ImageItem]  # the images among them, in order
    positions: Any  # [3, S] mRoPE positions of the new tokens
    next_pos: int  # the position of the first generated token
    image_keys: list[tuple]  # image_key of every image of the request


def full_positions(model: Any, codec: Any, ids: list[int], images: list[ImageItem]) -> Any:
    """``[3, len(ids)]`` mRoPE positions of one whole sequence, as a full prefill computes them."""
    import torch

    t = torch.tensor([ids], dtype=torch.long)
    if not images:
        return torch.arange(len(ids), dtype=torch.long).expand(3, -1)
    mm = torch.zeros_like(t, dtype=torch.int32)
    mm[t == codec.image_token_id] = 1
    mm[t == codec.video_token_id] = 2
    grid = torch.tensor([list(it.grid) for it in images], dtype=torch.long)
    pos, _ = model.model.get_rope_index(
        input_ids=t, mm_token_type_ids=mm, image_grid_thw=grid, attention_mask=None
    )
    return pos[:, 0].cpu()


def plan_row(model: Any, codec: Any, store: EpisodeStates, req: GenRequest) -> Row:
    """What of ``req`` its episode's kept state covers, and the rest with its positions."""
    if req.tokens is None:
        raise ValueError("the hf backend needs token-space requests (run it through EpisodeEngine)")
    ids = list(req.tokens.ids)
    keys = [image_key(it) for it in req.images]
    state = store.take(req.state_key, ids, keys) if req.state_key else None
    cached = len(state.ids) if state is not None else 0
    n_img = len(state.images) if state is not None else 0
    positions = full_positions(model, codec, ids, list(req.images))
    n_pads = sum(1 for t in ids[cached:] if t == codec.image_token_id)
    new_images = list(req.images[n_img:])
    if n_pads != sum(int(_tokens_of(it, model)) for it in new_images):
        raise ValueError(
            f"request {req.key}: {n_pads} image tokens after the kept {cached}, but its new "
            f"images take {sum(_tokens_of(it, model) for it in new_images)}"
        )
    return Row(
        req=req,
        state=state,
        cached=cached,
        new_ids=ids[cached:],
        new_images=new_images,
        positions=positions[:, cached:],
        next_pos=int(positions.max()) + 1,
        image_keys=keys,
    )


def _keeps(req: GenRequest) -> bool:
    """Whether the state of ``req``'s episode is worth keeping after this turn."""
    return req.continues and bool(req.state_key)


def _tokens_of(item: ImageItem, model: Any) -> int:
    merge = model.config.vision_config.spatial_merge_size
    t, h, w = item.grid
    return t * h * w // (merge * merge)


# -- vision ------------------------------------------------------------------------------------
def _features_of(
    key: tuple, fresh: dict[tuple, tuple[Any, list[Any]]], store: EpisodeStates, it: ImageItem
) -> tuple[Any, list[Any]]:
    """One image's ``(pooler, deepstack)`` features: encoded by this batch, else kept."""
    got = fresh.get(key) or store.features(key)
    if got is None:  # every key was either kept or encoded by this batch
        raise RuntimeError(f"image at {it.time:.2f} s was neither kept nor encoded")
    return got


def encoder_outputs(
    model: Any, store: EpisodeStates, rows: list[Row], device: Any, dtype: Any
) -> dict | None:
    """``mm_encoder_outputs`` for the new images of ``rows``, in batch order: kept features where
    the store has them, the rest encoded in one vision-tower call (each distinct image once), and
    kept for the episodes that continue."""
    import torch

    order = [it for row in rows for it in row.new_images]
    if not order:
        return None
    fresh: dict[tuple, tuple[Any, list[Any]]] = {}
    todo: dict[tuple, ImageItem] = {}
    for it in order:
        key = image_key(it)
        if store.features(key) is not None:
            store.stats.reused_images += 1
        elif key not in todo:
            todo[key] = it
    if todo:
        items = list(todo.values())
        pixels = join_rows(items).to(device=device, dtype=dtype)
        grid = torch.tensor([list(it.grid) for it in items], dtype=torch.long, device=device)
        feats = model.get_image_features(pixel_values=pixels, image_grid_thw=grid, return_dict=True)
        store.feature_type = type(feats)
        deep = getattr(feats, "deepstack_features", None) or []
        for j, key in enumerate(todo):
            fresh[key] = (feats.pooler_output[j], [layer[j] for layer in deep])
        store.stats.encoded_images += len(items)
    per_image = []
    for row in rows:
        for it in row.new_images:
            key = image_key(it)
            got = _features_of(key, fresh, store, it)
            per_image.append(got)
            if _keeps(row.req):
                store.keep_features(key, it.data, got[0], got[1], row.req.state_key)
    fields: dict[str, Any] = {"pooler_output": tuple(p for p, _ in per_image)}
    if per_image[0][1]:
        n_layers = len(per_image[0][1])
        fields["deepstack_features"] = [
            tuple(d[layer] for _, d in per_image) for layer in range(n_layers)
        ]
    return {"image": store.feature_type(**fields)}


# -- the batch ---------------------------------------------------------------------------------
@dataclass
class Batch:
    input_ids: Any  # [B, Smax] new tokens, right-aligned
    attention_mask: Any  # [B, Pmax + Smax]
    positions: Any  # [3, B, Smax]
    seen: Any  # [B, Pmax + Smax] every token so far (what the logits processors read)
    next_pos: Any  # [B] the position of each row's first generated token
    cache: Any  # a DynamicCache of Pmax columns
    pmax: int
    smax: int


def _kept_layers(rows: list[Row], pmax: int, device: Any):
    """Per layer, the batch's ``Pmax`` cached columns with each row's kept keys/values
    right-aligned; each row's own copy of a layer is let go once it is in the batch."""
    import torch

    first = next(r.state for r in rows if r.state is not None)
    n_layers = len(first.layers)
    for layer in range(n_layers):
        k0, v0 = first.layers[layer]
        shape_k = (len(rows), k0.shape[1], pmax, k0.shape[3])
        shape_v = (len(rows), v0.shape[1], pmax, v0.shape[3])
        keys = torch.zeros(shape_k, dtype=k0.dtype, device=device)
        values = torch.zeros(shape_v, dtype=v0.dtype, device=device)
        for i, row in enumerate(rows):
            if row.state is None or not row.cached:
                continue
            k, v = row.state.layers[layer]
            keys[i, :, pmax - row.cached :] = k[0]
            values[i, :, pmax - row.cached :] = v[0]
            row.state.layers[layer] = (None, None)
        yield keys, values


def build_batch(rows: list[Row], pad_id: int, device: Any) -> Batch:
    import torch
    from transformers import DynamicCache

    b = len(rows)
    pmax = max(r.cached for r in rows)
    smax = max(len(r.new_ids) for r in rows)
    ids = torch.full((b, smax), pad_id, dtype=torch.long)
    seen = torch.full((b, pmax + smax), pad_id, dtype=torch.long)
    mask = torch.zeros((b, pmax + smax), dtype=torch.long)
    pos = torch.zeros((3, b, smax), dtype=torch.long)
    for i, r in enumerate(rows):
        s = len(r.new_ids)
        ids[i, smax - s :] = torch.tensor(r.new_ids, dtype=torch.long)
        pos[:, i, smax - s :] = r.positions
        mask[i, pmax - r.cached : pmax] = 1
        mask[i, pmax + smax - s :] = 1
        if r.cached and r.state is not None:  # a cached prefix comes from a kept state
            seen[i, pmax - r.cached : pmax] = torch.tensor(r.state.ids, dtype=torch.long)
    seen[:, pmax:] = ids
    next_pos = torch.tensor([r.next_pos for r in rows], dtype=torch.long)
    cache = (
        DynamicCache(ddp_cache_data=_kept_layers(rows, pmax, device)) if pmax else DynamicCache()
    )
    return Batch(
        ids.to(device),
        mask.to(device),
        pos.to(device),
        seen.to(device),
        next_pos.to(device),
        cache,
        pmax,
        smax,
    )


# -- decoding ----------------------------------------------------------------------------------
def logits_processors(model: Any, gen_kwargs: dict, width: int, device: Any) -> tuple[Any, Any]:
    """``(generation_config, logits_processor)`` exactly as ``model.generate(**gen_kwargs)``
    would build them (the model's own generation config beneath ``gen_kwargs``: suppressed
    tokens, temperature, top-k, top-p, repetition penalty...). These are private methods of
    transformers' ``GenerationMixin``, with the same signatures from 5.19 to 5.24; the equality
    tests (tests/agent/test_prefill_reuse.py) compare this loop's tokens with ``generate``'s."""
    cfg, _ = model._prepare_generation_config(None, **gen_kwargs)
    model._prepare_special_tokens(cfg, kwargs_has_attention_mask=True, device=device)
    return cfg, model._get_logits_processor(cfg, input_ids_seq_length=width, device=device)


def decode(
    model: Any,
    batch: Batch,
    mm_outputs: dict | None,
    gen_kwargs: dict,
    stop_ids: list[int],
    pad_id: int,
    logprobs: str | None = None,
) -> tuple[Any, Any]:
    """Prefill the new tokens and decode up to ``max_new_tokens``: ``(tokens [B, steps],
    logprobs [B, steps] or None)``; a row that stopped is padded on, as ``generate`` does.

    ``logprobs``: ``"raw"``, each chosen token's log-probability under the raw logits (divided
    by the temperature when sampling: the hf backend's); ``"scores"``, under the processed
    scores (what ``generate(output_scores=True)`` gives: the policy backend's); ``None``: none.
    Each step's are taken at once, so no ``[B, V]`` tensor outlives its step.
    """
    import torch

    device = batch.input_ids.device
    cfg, processors = logits_processors(model, gen_kwargs, batch.seen.shape[1], device)
    name = _cache_kwarg(model)
    extra = {"mm_encoder_outputs": mm_outputs} if mm_outputs is not None else {}
    out = model(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        position_ids=batch.positions,
        use_cache=True,
        logits_to_keep=1,
        **{name: batch.cache},
        **extra,
    )
    b = batch.input_ids.shape[0]
    max_new = int(gen_kwargs["max_new_tokens"])
    stops = torch.tensor(stop_ids, dtype=torch.long, device=device)
    unfinished = torch.ones(b, dtype=torch.bool, device=device)
    mask, seen = batch.attention_mask, batch.seen
    tokens, lps = [], []
    for step in range(max_new):
        logits = out.logits[:, -1].to(copy=True, dtype=torch.float32)
        scores = processors(seen, logits)
        if cfg.do_sample:
            nxt = torch.multinomial(torch.softmax(scores, dim=-1), num_samples=1).squeeze(1)
        else:
            nxt = torch.argmax(scores, dim=-1)
        nxt = torch.where(unfinished, nxt, torch.full_like(nxt, pad_id))
        tokens.append(nxt)
        if logprobs is not None:
            lps.append(_chosen_logprob(logits, scores, nxt, logprobs, cfg))
        seen = torch.cat([seen, nxt[:, None]], dim=1)
        unfinished &= ~torch.isin(nxt, stops)
        if not bool(unfinished.any()) or step + 1 == max_new:
            break
        mask = torch.cat([mask, mask.new_ones((b, 1))], dim=1)
        pos = (batch.next_pos + step).view(1, b, 1).expand(3, b, 1)
        out = model(
            input_ids=nxt[:, None],
            attention_mask=mask,
            position_ids=pos,
            use_cache=True,
            **{name: batch.cache},
        )
    return torch.stack(tokens, dim=1), (torch.stack(lps, dim=1) if lps else None)


def _chosen_logprob(logits: Any, scores: Any, chosen: Any, kind: str, cfg: Any) -> Any:
    import torch

    raw = logits / cfg.temperature if cfg.do_sample else logits
    lp = torch.log_softmax((scores if kind == "scores" else raw).float(), dim=-1)
    return lp.gather(-1, chosen[:, None]).squeeze(-1)


def count(store: EpisodeStates, rows: list[Row]) -> None:
    """Add a finished batch's hits, misses and tokens to the store's counters."""
    st = store.stats
    st.hits += sum(1 for row in rows if row.cached)
    st.misses += sum(1 for row in rows if not row.cached)
    st.cached_tokens += sum(row.cached for row in rows)
    st.prefilled_tokens += sum(len(row.new_ids) for row in rows)


# -- keeping -----------------------------------------------------------------------------------
def keep_states(store: EpisodeStates, rows: list[Row], batch: Batch, generated: list[list[int]]):
    """Copy each continuing row's real columns out of the batch's cache into its episode's new
    state: kept tokens, new tokens, and every generated token but the last (never fed back). A
    row whose copy fails (out of memory) keeps nothing, and its next turn prefills in full."""
    layers = [(layer.keys, layer.values) for layer in batch.cache.layers]
    per_token = sum((k.shape[1] * k.shape[3]) * k.element_size() * 2 for k, _ in layers)
    for i, (row, gen) in enumerate(zip(rows, generated, strict=True)):
        if not _keeps(row.req) or not gen:
            continue
        n_tokens = row.cached + len(row.new_ids) + len(gen) - 1
        if not store.admit(row.req.state_key, n_tokens * per_token):
            continue
        try:
            store.put(row.req.state_key, _row_state(row, i, gen, layers, batch))
        except Exception:  # noqa: BLE001 - a state not kept is a full prefill, not a failure
            logger.warning(
                "episode %s: its KV cache was not kept", row.req.state_key, exc_info=True
            )


def _row_state(row: Row, i: int, gen: list[int], layers: list, batch: Batch) -> EpisodeState:
    import torch

    n_gen, s, end = len(gen) - 1, len(row.new_ids), batch.pmax + batch.smax
    cols = torch.cat(
        [torch.arange(batch.pmax - row.cached, batch.pmax), torch.arange(end - s, end + n_gen)]
    ).to(layers[0][0].device)
    kept = [
        (k[i : i + 1].index_select(2, cols), v[i : i + 1].index_select(2, cols)) for k, v in layers
    ]
    return EpisodeState(
        ids=list(row.req.require_tokens().ids) + list(gen[:n_gen]),
        images=row.image_keys,
        layers=kept,
        held=[it.data for it in row.req.images],
    )
