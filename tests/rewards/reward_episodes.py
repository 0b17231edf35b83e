"""The episode the reward's property tests score, and the invariant they check on it.

**The invariant.** A hedge ``H`` names two different candidates ``x`` and ``y`` (two options, two
spans, two phrases); the committed answers ``C(x)`` and ``C(y)`` name one each; the rest of the
episode is the same (a reasoned tool turn with one executed call, then a reasoned, tagged final
answer). Write ``T(a | g)`` for the episode's total reward when its answer is ``a`` and the gold is
``g``, computed by ``paravt.rewards.compose`` as ``ParaGRPOTrainer.score_episode`` calls it (one
text per turn, the engine's extracted answer, the question), with the paper's constants. Then for
each gold ``g`` in ``{x, y}``, with ``o`` the other candidate::

    T(H | g)  <=  T(C(o) | g)  <=  T(C(g) | g)          (a hedge scores at most a wrong guess)

which is, for every ``p`` in ``[0, 1]`` (``x`` gold with probability ``p``, ``y`` otherwise)::

    p·T(H|x) + (1−p)·T(H|y)  <=  p·T(C(x)|x) + (1−p)·T(C(x)|y)      (committing to x)
    p·T(H|x) + (1−p)·T(H|y)  <=  p·T(C(y)|x) + (1−p)·T(C(y)|y)      (committing to y)

so in expectation a hedge never beats either committed guess, however sure the model is.
:func:`check` asserts the first line and the two mixtures on a grid of ``p``.

``SETTINGS``: 1,000 examples per rule, derandomized (the same examples on every run, CI's
included: a failure seen once is seen again), no deadline (the machine is shared).
"""

from __future__ import annotations

from functools import lru_cache

from hypothesis import HealthCheck, settings

from paravt.grammar import extract_answer
from paravt.rewards import RewardConfig, compose
from paravt.schema.tools import ToolCounts

SETTINGS = settings(
    max_examples=1000,
    deadline=None,
    derandomize=True,  # the same examples in every CI run
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
CFG = RewardConfig()  # the paper's constants
PREFILL = "<think>\n"
QUESTION = "What happens in the video?"
CALL = (
    '<tool_call>{"name": "crop_video", "arguments": '
    '{"video_path": "video", "start_time": 2, "end_time": 5}}</tool_call>'
)
EXECUTED = ToolCounts(parseable_calls=1, executed_ok=1)
GRID = [i / 20 for i in range(21)]


def total(answer: str, gold, qtype: str, options: tuple | None, tail: str = "") -> float:
    """The episode's total through the real composition: a reasoned tool turn with one executed
    call, then a reasoned final turn answering ``answer`` in tags (and writing ``tail`` after
    the closed answer), scored with the engine's extracted answer as ``score_episode`` does."""
    final = f"The window shows it clearly.</think>\n<answer>{answer}</answer>{tail}"
    turns = ["I need to see the middle of the clip first.</think>\n" + CALL, final]
    r = compose(
        PREFILL,
        turns,
        EXECUTED,
        gold,
        qtype,
        options,
        CFG,
        answer=extract_answer(final),
        question=QUESTION,
    )
    return r.total


@lru_cache(maxsize=4096)
def committed(answer: str, gold, qtype: str, options: tuple | None) -> float:
    return total(answer, gold, qtype, options)


def check(
    hedge: str, x, y, commit_x: str, commit_y: str, qtype: str, options=None, tail: str = ""
) -> None:
    """The invariant of the module docstring for one hedge of candidates ``x`` and ``y``."""
    h = {g: total(hedge, g, qtype, options, tail) for g in (x, y)}
    right = {x: committed(commit_x, x, qtype, options), y: committed(commit_y, y, qtype, options)}
    wrong = {x: committed(commit_y, x, qtype, options), y: committed(commit_x, y, qtype, options)}
    for g in (x, y):
        assert h[g] <= wrong[g] + 1e-9, (hedge, tail, g, h[g], wrong[g])
        assert wrong[g] <= right[g] + 1e-9, (g, wrong[g], right[g])
    for p in GRID:
        hedge_mean = p * h[x] + (1 - p) * h[y]
        assert hedge_mean <= p * right[x] + (1 - p) * wrong[y] + 1e-9
        assert hedge_mean <= p * wrong[x] + (1 - p) * right[y] + 1e-9
