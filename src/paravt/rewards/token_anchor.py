"""Token-level anchoring: where the structural tokens sit in a completion, and a per-token bonus.

Why: the anchor term of R_fmt is one number per episode; GRPO spreads it over every token of the
completion. Putting (part of) that credit on the very tokens that close the reasoning, open and
close the answer, and close a tool call is our reading of "selective anchoring at structural token
positions" (docs/PROTOCOL.md §5.3). The trainer adds the vector to the advantages when
``RewardConfig.token_anchor`` is on, and only in groups whose rewards vary: like the episode-level
anchor term, it sharpens a comparison GRPO makes; it never creates a push where the group had
none (docs/train/REWARDS.md).

How positions are found: from the tokenizer's own token strings (``convert_ids_to_tokens``), not
by decoding and re-tokenizing. The strings are concatenated and each tag is searched for in that
concatenation; the position is the token holding the tag's last character. So a tag that is one
special token lands on that token, and a tag that the tokenizer happens to split (``</`` ``answer``
``>``) lands on its final piece — both byte-level BPE (``Ġ``/``Ċ`` markers) and SentencePiece
keep the ASCII characters of a tag as they are. No tokenizer state is cached here.
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from paravt.rewards.config import DEFAULT_TOKEN_ANCHOR_VALUES

logger = logging.getLogger(__name__)

__all__ = ["ANCHOR_TAGS", "anchor_positions", "anchor_token_bonus"]

#: The structural tags of docs/PROTOCOL.md §5.3, in the order they usually appear.
ANCHOR_TAGS: tuple[str, ...] = tuple(DEFAULT_TOKEN_ANCHOR_VALUES)


def _token_strings(token_ids: Sequence[int], tokenizer: Any) -> list[str]:
    ids = [int(t) for t in token_ids]
    try:
        pieces = tokenizer.convert_ids_to_tokens(ids)
    except Exception:  # an id outside the vocabulary: convert one by one
        logger.warning(
            "convert_ids_to_tokens failed on %d ids; converting them one by one",
            len(ids),
            exc_info=True,
        )
        pieces, unknown = [], []
        for t in ids:
            try:
                pieces.append(tokenizer.convert_ids_to_tokens(t))
            except Exception:  # noqa: BLE001 - this id holds no tag; listed in the warning below
                unknown.append(t)
                pieces.append("")
        if unknown:
            logger.warning("ids with no token string, read as empty: %s", sorted(set(unknown)))
    out = []
    for p in pieces:
        if p is None:
            out.append("")
        elif isinstance(p, bytes):
            out.append(p.decode("latin-1"))
        else:
            out.append(str(p))
    return out


def anchor_positions(
    token_ids: Sequence[int], tokenizer: Any, tags: Iterable[str] = ANCHOR_TAGS
) -> dict[str, list[int]]:
    """``{tag: [token index, ...]}`` for every occurrence of each tag in the token sequence."""
    pieces = _token_strings(token_ids, tokenizer)
    starts, pos = [], 0
    for p in pieces:
        starts.append(pos)
        pos += len(p)
    joined = "".join(pieces)
    found: dict[str, list[int]] = {}
    for tag in tags:
        hits: list[int] = []
        if tag:
            at = joined.find(tag)
            while at >= 0:
                last_char = at + len(tag) - 1
                hits.append(bisect_right(starts, last_char) - 1)
                at = joined.find(tag, at + len(tag))
        found[tag] = hits
    return found


def anchor_token_bonus(
    token_ids: Sequence[int],
    tokenizer: Any,
    values: Mapping[str, float] | None = None,
    turns: Sequence[tuple[int, int]] | None = None,
    open_think: Sequence[bool] = (),
    think_closed: Sequence[bool] | None = None,
) -> list[float]:
    """A vector as long as ``token_ids``: the anchor credit placed on the structural tokens.

    The rule (one that repetition cannot farm): in each turn, the **first** occurrence of each tag
    gets ``values[tag]``; later repeats get nothing. Each turn that leaves a ``<think>`` open
    (``open_think[i]``, from :func:`~paravt.rewards.format.open_think_turns`) gets
    ``-values["</think>"]`` on its last token — where the close should have been — mirroring the
    anchor term's −0.3 for an unclosed think.

    ``think_closed[i]`` (from :func:`~paravt.rewards.format.substantive_close_turns`) says
    whether turn ``i`` closes a substantive think; where it is False the turn's ``</think>`` earns
    nothing (a ``</think>`` right after the pre-filled opener closes no reasoning). ``None`` (the
    default) pays every turn's first ``</think>``.

    ``turns`` are ``(start, end)`` index ranges of each turn's generated ids inside ``token_ids``
    (default: the whole sequence is one turn). Defaults to
    :data:`~paravt.rewards.config.DEFAULT_TOKEN_ANCHOR_VALUES`. Pass the completion's ids only
    (the prompt's own tags are not the model's doing).
    """
    values = DEFAULT_TOKEN_ANCHOR_VALUES if values is None else values
    bonus = [0.0] * len(token_ids)
    if not bonus:
        return bonus
    spans = [(0, len(bonus))] if turns is None else list(turns)
    positions = anchor_positions(token_ids, tokenizer, [t for t, v in values.items() if v])
    for tag, where in positions.items():
        for k, (start, end) in enumerate(spans):
            hollow = think_closed is not None and (k >= len(think_closed) or not think_closed[k])
            if tag == "</think>" and hollow:
                continue
            first = next((i for i in where if start <= i < end), None)
            if first is not None:
                bonus[first] += float(values[tag])
    penalty = -float(values.get("</think>", 0.0))
    # open_think may be shorter than spans (empty by default): a turn it does not cover is closed
    for (start, end), unclosed in zip(spans, open_think, strict=False):
        if unclosed and penalty and 0 <= start < end <= len(bonus):
            bonus[end - 1] += penalty
    return bonus
