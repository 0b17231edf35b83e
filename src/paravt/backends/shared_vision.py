"""Encode each distinct image of a generate batch once, and hand the features to ``generate``.

Why: in an evaluation batch every episode of one video holds the same overview (K = 64 at 720p is
~0.9 GB of float32 rows), and GRPO's generations of one prompt hold the same overview and often
the same windows. Joining every request's ``pixel_values`` into the one tensor ``generate`` takes
would copy those rows once per episode (8 copies for a batch of 8), and the vision tower would
encode each copy again. transformers' Qwen-VL models accept pre-computed vision features instead
(``mm_encoder_outputs``, what ``generate`` itself builds from ``pixel_values`` before prefill), so
the distinct images are joined (a view when they are the shared overview rows), encoded once, and
each request's images point at those features; the language model sees exactly what it would
see from the joined pixels.
"""

from __future__ import annotations

from typing import Any

from paravt.schema.episodes import GenRequest, ImageItem, join_rows

__all__: list[str] = []  # nothing here is for the other rooms


def image_key(item: ImageItem) -> tuple:
    """Same decoded frame (same memory) under the same pixel budget: the same vision features."""
    data = item.data
    return (
        data.data_ptr(),
        tuple(data.shape),
        tuple(data.stride()),
        str(data.device),
        item.min_pixels,
        item.max_pixels,
    )


def distinct_images(reqs: list[GenRequest]) -> tuple[list[ImageItem], list[int]]:
    """The batch's distinct images, and for every image of every request (in order) its index
    among them."""
    index: dict[tuple, int] = {}
    distinct: list[ImageItem] = []
    order: list[int] = []
    for r in reqs:
        for it in r.images:
            key = image_key(it)
            j = index.get(key)
            if j is None:
                j = index[key] = len(distinct)
                distinct.append(it)
            order.append(j)
    return distinct, order


def supports_shared_features(model: Any) -> bool:
    """Whether ``model.generate`` takes pre-computed image features (``mm_encoder_outputs``)."""
    check = getattr(model, "_supports_mm_encoder_outputs", None)
    return bool(check and check()) and hasattr(model, "get_image_features")


def shared_image_inputs(
    model: Any, reqs: list[GenRequest], device: Any, dtype: Any
) -> tuple[dict, Any, int] | None:
    """``(mm_encoder_outputs, image_grid_thw, distinct image count)`` for ``generate``, or
    ``None`` when the batch has no images or an image has no preprocessed rows."""
    import torch

    distinct, order = distinct_images(reqs)
    if not distinct or any(it.pixels is None or it.grid_thw is None for it in distinct):
        return None
    pixels = join_rows(distinct).to(device=device, dtype=dtype)
    grid = torch.tensor([list(it.grid) for it in distinct], dtype=torch.long, device=device)
    feats = model.get_image_features(pixel_values=pixels, image_grid_thw=grid, return_dict=True)
    fields = dict(feats.items())
    fields["pooler_output"] = tuple(feats.pooler_output[j] for j in order)
    if fields.get("deepstack_features") is not None:  # Qwen3-VL's features for inner LM layers
        fields["deepstack_features"] = [
            tuple(layer[j] for j in order) for layer in fields["deepstack_features"]
        ]
    fields.pop("last_hidden_state", None)  # the distinct images' tower states: never read
    batch_grid = grid[torch.tensor(order, dtype=torch.long, device=device)]
    return {"image": type(feats)(**fields)}, batch_grid, len(distinct)
