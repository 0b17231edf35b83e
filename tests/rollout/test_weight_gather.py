"""The bucketed gather a weight push sends (``paravt.rollout.weight_gather``), on one process: a
tiny random Qwen3-VL's every tensor, whole, in the serving dtype, bucket by bucket within the
bound, equal to its state dict. Sharded (FSDP2, ZeRO-3) on 2 gloo ranks:
tests/train/test_weight_push_ranks.py."""

from __future__ import annotations

import pytest
import torch

from paravt.models.tiny import build_tiny
from paravt.rollout.weight_gather import (
    gathered_buckets,
    manifest,
    named_tensors,
    plan_buckets,
    tensors_of,
    torch_dtype,
)


@pytest.fixture(scope="module")
def model():
    m, _ = build_tiny("qwen3-vl", seed=3)
    return m


def _unique_state_dict(model) -> dict:
    """The state dict with each tied tensor once (what a checkpoint holds)."""
    seen, out = set(), {}
    for k, v in model.state_dict().items():
        if v.data_ptr() not in seen:
            seen.add(v.data_ptr())
            out[k] = v
    return out


@pytest.mark.parametrize("serving", ["bfloat16", "float16", "float32"])
def test_every_tensor_comes_whole_in_the_serving_dtype_within_the_bound(model, serving):
    dtype = torch_dtype(serving)
    bound = 96 * 1024  # several buckets for this model; its embedding alone is larger
    buckets = list(gathered_buckets(model, dtype=dtype, bucket_bytes=bound, keep=True))
    got = {n: t for b in buckets for n, t in zip(b.names, b.tensors, strict=True)}
    want = _unique_state_dict(model)
    assert list(got) == list(want)  # every tensor, once, in state_dict order and names
    for name, t in got.items():
        assert t.dtype == dtype and t.device.type == "cpu" and t.is_contiguous()
        assert torch.equal(t, want[name].to(dtype)), name
    assert len(buckets) > 3
    for b in buckets:
        # counted at the larger of the learner's (fp32) and the serving dtype's size
        counted = sum(want[n].numel() * 4 for n in b.names)
        assert counted <= bound or len(b.names) == 1
        assert b.nbytes == sum(t.numel() * t.element_size() for t in b.tensors)


def test_the_copies_are_the_push_s_own(model):
    """fp32 served in fp32: the gathered tensor is a copy, not the live parameter the optimizer
    changes in place."""
    (first, *_), *_ = [b.tensors for b in gathered_buckets(
        model, dtype=torch.float32, bucket_bytes=1 << 30, keep=True
    )]  # fmt: skip
    live = next(iter(model.state_dict().values()))
    assert torch.equal(first, live) and first.data_ptr() != live.data_ptr()


def test_views_are_handed_over_when_asked_and_cast_by_the_consumer(model):
    """``own=False`` (the synchronous folder push): a plain model's tensors come as views of the
    live weights, in the learner's dtype, and ``ready()`` gives them in the serving dtype."""
    (bucket, *_) = gathered_buckets(
        model, dtype=torch.bfloat16, bucket_bytes=1 << 30, keep=True, own=False
    )
    live = model.state_dict()
    first, name = bucket.tensors[0], bucket.names[0]
    assert first.dtype == torch.float32 and first.data_ptr() == live[name].data_ptr()
    ready = bucket.ready()
    assert [t.dtype for t in ready] == [torch.bfloat16] * len(ready)
    assert all(
        torch.equal(t, live[n].to(torch.bfloat16)) for n, t in zip(bucket.names, ready, strict=True)
    )


def test_a_bucket_is_cast_into_a_kept_buffer_as_tensors_of_their_own(model):
    (bucket, *_) = gathered_buckets(
        model, dtype=torch.bfloat16, bucket_bytes=1 << 30, keep=True, own=False
    )
    assert bucket.needs_cast()
    buf = bytearray(bucket.span())
    into = bucket.ready_into(buf)
    assert all(torch.equal(a, b) for a, b in zip(into, bucket.ready(), strict=True))
    storages = {t.untyped_storage().data_ptr() for t in into}
    assert len(storages) == len(into)  # safetensors refuses tensors that share one


def test_a_rank_that_does_not_keep_gets_the_same_buckets_empty(model):
    kept = list(gathered_buckets(model, dtype=torch.bfloat16, bucket_bytes=96 * 1024, keep=True))
    empty = list(gathered_buckets(model, dtype=torch.bfloat16, bucket_bytes=96 * 1024, keep=False))
    assert [b.names for b in kept] == [b.names for b in empty]
    assert [b.nbytes for b in kept] == [b.nbytes for b in empty]
    assert all(b.tensors == [] for b in empty)
    assert list(named_tensors(iter(empty))) == []


def test_the_manifest_describes_the_stream(model):
    names, dtypes, shapes = manifest(model, torch.bfloat16)
    stream = list(named_tensors(gathered_buckets(
        model, dtype=torch.bfloat16, bucket_bytes=1 << 20, keep=True
    )))  # fmt: skip
    assert names == [n for n, _ in stream]
    assert shapes == [list(t.shape) for _, t in stream]
    assert set(dtypes) == {"bfloat16"}


def test_tied_weights_go_once():
    m, _ = build_tiny("qwen3-vl", seed=0)
    m.lm_head.weight = m.model.language_model.embed_tokens.weight  # tie them
    names = [e.name for e, _ in tensors_of(m)]
    assert "model.language_model.embed_tokens.weight" in names and "lm_head.weight" not in names


def test_the_plan_cuts_at_the_bound():
    from paravt.rollout.weight_gather import Entry

    e = [Entry(f"t{i}", (n,), torch.float32, "plain") for i, n in enumerate([10, 10, 30, 5, 5])]
    assert plan_buckets(e, torch.bfloat16, 80) == [[0, 1], [2], [3, 4]]  # 4 bytes an element
    assert plan_buckets(e, None, 1000) == [[0, 1, 2, 3, 4]]
    with pytest.raises(ValueError):
        plan_buckets(e, None, 0)


def test_serving_dtype_names():
    assert torch_dtype("torch.bfloat16") is torch.bfloat16
    assert torch_dtype("half") is torch.float16
    assert torch_dtype("auto") is None and torch_dtype(None) is None
    with pytest.raises(ValueError, match="use one of auto, float32, bfloat16, float16"):
        torch_dtype("int8")
