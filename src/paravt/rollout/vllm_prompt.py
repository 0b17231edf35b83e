"""The token prompt vLLM is given for an episode's stream, and the check that it read it back.

paravt's stream holds each frame as ``<|vision_start|>`` + one ``<|image_pad|>`` per vision
feature + ``<|vision_end|>`` (the processor's expansion, what the learner trains on). vLLM's
multimodal processor expects the other form for a token prompt sent with images: one
placeholder per image, which it expands itself from the image it is given. Sent the expanded
stream, vLLM expands every pad of it again — each frame's features then fill the first pads of a
far longer prompt, no error is raised, and the sampler's logprobs belong to another context (the
importance-sampling correction drops those episodes and the run stops learning).

So the vLLM prompt is the stream with every run of image pads collapsed to one pad
(``collapse_image_pads``), and the prompt ids vLLM reports after its own expansion must equal the
stream (``check_reported_prompt``): anything else is a ``VLLMPromptMismatchError`` naming the
episode, never a silently wrong sample. ``expand_image_pads`` is the inverse of the collapse, for
a frame's run lengths.
"""

from __future__ import annotations

from collections.abc import Sequence

from paravt.errors import ParavtError

__all__: list[str] = []  # nothing here is for the other rooms


class VLLMPromptMismatchError(ParavtError):
    """vLLM's prompt for an episode is not the episode's stream (its frames' features would sit on
    other tokens than the learner's)."""


def image_pad_runs(ids: Sequence[int], pad_id: int) -> list[int]:
    """The length of each maximal run of ``pad_id`` in ``ids``, in order (one run per frame)."""
    runs: list[int] = []
    prev_pad = False
    for tok in ids:
        is_pad = tok == pad_id
        if is_pad and prev_pad:
            runs[-1] += 1
        elif is_pad:
            runs.append(1)
        prev_pad = is_pad
    return runs


def collapse_image_pads(ids: Sequence[int], pad_id: int) -> list[int]:
    """``ids`` with every run of ``pad_id`` replaced by a single ``pad_id`` (vLLM's form)."""
    out: list[int] = []
    for tok in ids:
        if tok == pad_id and out and out[-1] == pad_id:
            continue
        out.append(int(tok))
    return out


def expand_image_pads(ids: Sequence[int], pad_id: int, lengths: Sequence[int]) -> list[int]:
    """The inverse of ``collapse_image_pads``: pad run ``i`` of ``ids`` (one pad in the collapsed
    form) becomes ``lengths[i]`` pads. ``ValueError`` when the run and length counts differ."""
    runs = image_pad_runs(ids, pad_id)
    if len(runs) != len(lengths):
        raise ValueError(f"{len(runs)} image-pad runs but {len(lengths)} lengths")
    out: list[int] = []
    k = -1
    for j, tok in enumerate(ids):
        if tok != pad_id:
            out.append(int(tok))
            continue
        if j == 0 or ids[j - 1] != pad_id:
            k += 1
            out.extend([pad_id] * int(lengths[k]))
    return out


def _first_difference(a: Sequence[int], b: Sequence[int]) -> int:
    for j, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return j
    return min(len(a), len(b))


def check_reported_prompt(
    stream: Sequence[int],
    reported: Sequence[int] | None,
    pad_id: int,
    *,
    episode: str,
    turn: int,
    sent_collapsed: bool,
) -> None:
    """Raise ``VLLMPromptMismatchError`` unless ``reported`` (the prompt ids vLLM says it ran,
    after its own placeholder expansion) is exactly ``stream`` (paravt's prompt for the turn).

    ``sent_collapsed`` says which form vLLM was sent, for the message. A generator that reports
    no prompt ids (``None``) cannot be checked and passes."""
    if reported is None:
        return
    reported = [int(t) for t in reported]
    if reported == [int(t) for t in stream]:
        return
    j = _first_difference(stream, reported)
    mine, theirs = image_pad_runs(stream, pad_id), image_pad_runs(reported, pad_id)
    form = "one image pad per frame" if sent_collapsed else "its image pads expanded"
    raise VLLMPromptMismatchError(
        f"episode {episode} turn {turn}: vLLM ran a prompt of {len(reported)} tokens "
        f"({sum(theirs)} image pads in {len(theirs)} runs, {theirs[:8]}...) for a stream of "
        f"{len(stream)} tokens ({sum(mine)} image pads in {len(mine)} runs, {mine[:8]}...); "
        f"first difference at token {j}. The prompt was sent with {form}; vLLM's own expansion "
        "of the frames does not give paravt's stream, so its features and logprobs would not "
        "be the learner's. Check that vLLM's processor settings (the model folder's "
        "preprocessor_config.json, or the server's --mm-processor-kwargs) keep each frame at the "
        "size its pads were counted for, and that this vLLM version expands a single "
        "<|image_pad|> per image (docs/train/VLLM.md, colocate mode)"
    )
