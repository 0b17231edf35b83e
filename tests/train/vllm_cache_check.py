"""One two-round episode through a real vLLM (colocated or a server), and what its prefix cache
did with round 2 (``test_vllm_colocate.py``, ``test_vllm_server_mode.py``).

Round 1 is sent to vLLM (no forced first turn): the main agent's pre-fill carries a
``crop_video`` call, so a random model's round 1 is a tool turn whatever it samples after it (none
of the chat's markup tokens: ``markup_ids``). The
crop's frames come back, and round 2 is the forced answer over the whole context. vLLM caches
whole KV blocks only, so round 2 can be served every full block of what round 1 computed (its
prompt and all but its last sampled token): ``block * ((L1 + g1 - 1) // block)``. Each turn
samples exactly ``block + 8`` tokens (``min_tokens`` = the budget: a random model's early stop
token cannot cut round 1 short), so that bound is at least round 1's whole prompt ``L1``. Fewer
means a miss — a frame hashed differently between the rounds, a pad run laid out otherwise, a
token that changed.
"""

from __future__ import annotations

from paravt.agent.config import CropSettings, EngineConfig
from paravt.schema.episodes import EpisodeInput

#: a think, then one crop_video call: the main agent's pre-fill, so a random model's round 1 is
#: a tool turn whatever it samples after it
PREFILL = (
    "<think>\nI need to look at the start.</think>\n<tool_call>\n"
    '{"name": "crop_video", "arguments": {"video_path": "video", "start_time": 0, "end_time": 2}}'
    "\n</tool_call>"
)


def turn_tokens(block: int) -> int:
    """What each turn samples: past the end of round 1's last prompt block whatever ``L1``."""
    return block + 8


def markup_ids(processor) -> list[int]:
    """Every added token of the tokenizer: the vision tokens (paravt ends a turn before one,
    which would cut round 1 short) and the chat's markup (``<tool_call>``, ``</think>``, ...: a
    random model whose vocabulary is a few hundred tokens, the tiny one's 531, samples one in
    about one round in four: a stray ``</think>`` after the pre-filled call reads that call as
    part of the thinking, an ``<answer>`` makes the turn an answer, and round 2 then carries no
    crop frames, which failed this check once in CI)."""
    tok = getattr(processor, "tokenizer", processor)
    return sorted(int(i) for i in tok.added_tokens_decoder)


def sampling_kwargs(block: int, banned: list[int] = ()) -> dict:
    """The generator's ``generation_kwargs``: no stop before the budget, and no ``banned`` token
    (``markup_ids``)."""
    out: dict = {"min_tokens": turn_tokens(block)}
    if banned:
        out["logit_bias"] = {int(t): -100.0 for t in banned}
    return out


def engine_config(block: int, budget: dict) -> EngineConfig:
    """One tool round (then the forced answer), two overview frames, two crop frames."""
    return EngineConfig(
        mode="parallel",
        max_turns=1,
        max_parallel=1,
        frames=2,
        max_new_tokens=turn_tokens(block),
        temperature=1.0,
        think_prefix=PREFILL,
        forced_tokens_mcq=turn_tokens(block),
        crop=CropSettings(max_frames=2, **budget),
        **budget,
    )


def episode(video: str, tag: str) -> EpisodeInput:
    return EpisodeInput(
        id=f"{tag}0",
        video=video,
        question=f"What happens in part {tag}?",
        options=["A", "B", "C", "D"],
        question_type="mcq",
        frames_k=2,
        answer="A",
    )


def round_counts(record) -> list[dict]:
    """Per round: prompt tokens, the cached ones vLLM reported, the generated ones."""
    return [
        {"prompt": t.prompt_tokens, "cached": t.cached_tokens, "generated": t.generated_tokens}
        for t in record.turns
    ]


def check_round_two_hits(record, block: int) -> list[dict]:
    """The counts (``round_counts``) after asserting round 2 was served every full block of
    round 1's computed tokens, which covers round 1's whole prompt."""
    assert record.status == "ok", record.error
    rounds = round_counts(record)
    assert len(rounds) == 2, rounds
    one, two = rounds
    assert one["generated"] == turn_tokens(block), rounds  # no vision token cut it short
    computed = one["prompt"] + one["generated"] - 1  # the last sampled token was never fed
    assert two["cached"] == block * (computed // block), (rounds, block)
    assert two["cached"] >= one["prompt"], rounds
    assert two["cached"] < two["prompt"], rounds
    return rounds


def check_same_frame_hashes(per_request: list[list[str]]) -> None:
    """Round 2 sent round 1's frames under the same hashes, first and in order, then the crop's
    (which may repeat an overview frame's hash: the same pixels are the same item)."""
    assert len(per_request) == 2, per_request
    first, second = per_request
    assert first and len(second) > len(first), per_request
    assert second[: len(first)] == first, per_request
