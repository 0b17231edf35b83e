"""For arbitrary strings: no exception, and every reward term within its range."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paravt.rewards import (
    RewardConfig,
    accuracy,
    compose,
    extract_mcq_letter,
    format_score,
    format_terms,
    parse_span,
    temporal_iou,
    temporal_iou_hull,
    tool_reward,
)
from paravt.schema.questions import LETTERS
from paravt.schema.tools import ToolCounts

_pieces = st.sampled_from(
    [
        "<think>",
        "</think>",
        "<answer>",
        "</answer>",
        "<tool_call>",
        "</tool_call>",
        "<tool_code>",
        "<tool_response>",
        "</tool_response>",
        "A",
        "B",
        "E",
        "J",
        "a man",
        "(C)",
        "Option ",
        "the ",
        "answer is ",
        "12.0",
        " - ",
        " to ",
        "[",
        ", ",
        "]",
        "1:05",
        "s",
        " ",
        "\n",
        "x" * 12,
        ".",
        "<|im_end|>",
        "<|im_start|>assistant\n",
    ]
)
texts = st.one_of(st.text(max_size=200), st.lists(_pieces, max_size=30).map("".join))
#: an episode as the trainer passes it: one text per turn (or, for other callers, one string)
episodes = st.one_of(texts, st.lists(texts, min_size=0, max_size=4))
options = st.one_of(st.none(), st.lists(st.text(max_size=20), min_size=0, max_size=10))
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(prefix=texts, completion=episodes, calls_made=st.sampled_from([None, True, False]))
def test_format_terms_in_range(prefix, completion, calls_made):
    cfg = RewardConfig()
    t = format_terms(completion, cfg, prefix=prefix, calls_made=calls_made)
    assert 0.0 <= t.base <= 1.1 + 1e-9
    assert -0.3 - 1e-9 <= t.anchor <= 0.7 + 1e-9
    assert 0.0 <= format_score(t.base, t.anchor, cfg) <= 1.0


@SETTINGS
@given(pred=texts, gold=texts, opts=options)
def test_accuracy_in_range(pred, gold, opts):
    for qtype in ("mcq", "tvg", "oe"):
        assert 0.0 <= accuracy(pred, gold, qtype, opts) <= 1.0
    assert 0.0 <= accuracy(pred, gold, "oe", oe_metric="exact") <= 1.0
    letter = extract_mcq_letter(pred, opts)
    assert letter is None or (letter in LETTERS and (not opts or LETTERS.index(letter) < len(opts)))
    span = parse_span(pred)
    if span is not None:
        assert math.isfinite(span[0]) and math.isfinite(span[1]) and span[0] <= span[1]


@SETTINGS
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=4, max_size=4))
def test_iou_in_range_and_equals_hull_iou(xs):
    p, g = (xs[0], xs[1]), (xs[2], xs[3])
    iou, hull = temporal_iou(p, g), temporal_iou_hull(p, g)
    assert 0.0 <= iou <= 1.0 and 0.0 <= hull <= 1.0
    assert math.isclose(iou, hull, rel_tol=1e-6, abs_tol=1e-6)


@SETTINGS
@given(
    prefix=texts,
    completion=episodes,
    counts=st.tuples(*[st.integers(-3, 10)] * 3),
    acc=st.floats(-1, 2, allow_nan=False),
)
def test_tool_and_compose_in_range(prefix, completion, counts, acc):
    ex = ToolCounts(*counts)
    assert 0.0 <= tool_reward(ex, acc) <= 1.0
    r = compose(prefix, completion, ex, "B", "mcq", ["x", "y", "z"])
    assert 0.0 <= r.acc <= 1.0 and 0.0 <= r.fmt <= 1.0 and 0.0 <= r.tool <= 1.0
    assert -0.3 - 1e-9 <= r.anchor <= 0.7 + 1e-9
    assert math.isclose(r.total, r.acc + r.fmt + r.tool)
    assert 0.0 <= r.total <= 3.0
