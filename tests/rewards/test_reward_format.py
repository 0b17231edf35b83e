"""R_fmt and the anchor term: every docs/PROTOCOL.md §5.2 constant, the pre-filled <think>, the
exploit."""

from __future__ import annotations

import pytest

from paravt.rewards import RewardConfig, format_reward, format_score, format_terms, scored_text

CALL = (
    '<tool_call>{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}</tool_call>'
)
THINK = "I compare the two windows."  # ≥ 10 characters

# (id, prefix, completion, expected non-zero terms, expected R_fmt with λ_anchor = 0.5)
TABLE = [
    (
        "full flow, pre-filled think",
        "<think>\n",
        THINK + "</think><answer>B</answer>",
        dict(
            think=0.2, answer=0.3, answer_close=0.2, balanced=0.1, anchor_close=0.4, anchor_flow=0.3
        ),
        1.0,  # 0.8 + 0.5 * 0.7 = 1.15, clipped to 1
    ),
    (
        "same completion without the pre-fill (the reference's blind spot)",
        "",
        THINK + "</think><answer>B</answer>",
        dict(answer=0.3, answer_close=0.2),
        0.5,
    ),
    (
        "think in the completion itself",
        "",
        f"<think>{THINK}</think><answer>B</answer>",
        dict(
            think=0.2, answer=0.3, answer_close=0.2, balanced=0.1, anchor_close=0.4, anchor_flow=0.3
        ),
        1.0,
    ),
    (
        "think of exactly 10 characters and 3 distinct words is substantive",
        "",
        "<think>我要看一看中间的画面</think><answer>B</answer>",  # one CJK character, one word
        dict(
            think=0.2, answer=0.3, answer_close=0.2, balanced=0.1, anchor_close=0.4, anchor_flow=0.3
        ),
        1.0,
    ),
    (
        "10 characters of filler are no reasoning",
        "",
        "<think>0123456789</think><answer>B</answer>",
        dict(answer=0.3, answer_close=0.2, balanced=0.1),
        0.6,
    ),
    (
        "one word repeated is no reasoning",
        "",
        "<think>ok ok ok ok ok ok ok</think><answer>B</answer>",
        dict(answer=0.3, answer_close=0.2, balanced=0.1),
        0.6,
    ),
    (
        "two distinct words are not enough",
        "",
        "<think>fine, ok, fine, ok.</think><answer>B</answer>",
        dict(answer=0.3, answer_close=0.2, balanced=0.1),
        0.6,
    ),
    (
        "think of 9 characters is not",
        "",
        "<think> 012345678 </think><answer>B</answer>",
        dict(answer=0.3, answer_close=0.2, balanced=0.1),
        0.6,  # no think term: the close and the flow need a substantive think too
    ),
    (
        "tool turn: think before the call",
        "",
        f"<think>{THINK}</think>{CALL}",
        dict(think=0.2, think_before_call=0.3, balanced=0.1, anchor_close=0.4),
        0.8,  # 0.6 + 0.2
    ),
    (
        "tool turn: pre-filled think counts as before the call",
        "<think>\n",
        f"{THINK}</think>{CALL}",
        dict(think=0.2, think_before_call=0.3, balanced=0.1, anchor_close=0.4),
        0.8,
    ),
    (
        "call before any think",
        "",
        f"{CALL}<think>{THINK}</think>",
        dict(think=0.2, balanced=0.1, anchor_close=0.4),
        0.5,  # 0.3 + 0.2
    ),
    (
        "think opened and never closed",
        "",
        "<think>I keep thinking and thinking",
        dict(think=0.2, anchor_unclosed=-0.3),
        0.05,  # substantive, so +0.2 (docs/PROTOCOL.md §5.2); the missing close costs 0.5 * 0.3
    ),
    (
        "short never-closed think earns no think credit",
        "",
        "<think>hmm",
        dict(anchor_unclosed=-0.3),
        0.0,  # 0 - 0.15, clipped to 0
    ),
    (
        "never-closed think with an answer",
        "",
        "<think>I keep thinking about it <answer>B</answer>",
        dict(think=0.2, answer=0.3, answer_close=0.2, anchor_unclosed=-0.3),
        0.55,  # 0.7 - 0.15
    ),
    (
        "a never-closed think's reasoning ends at the next tag",
        "",
        "<think>hm <answer>B because the man flips it</answer>",
        dict(answer=0.3, answer_close=0.2, anchor_unclosed=-0.3),
        0.35,  # the answer's words are not reasoning
    ),
    (
        "answer without its closer",
        "",
        f"<think>{THINK}</think><answer>B",
        dict(think=0.2, answer=0.3, anchor_close=0.4),
        0.7,  # 0.5 + 0.2
    ),
    (
        "empty-tag exploit",
        "",
        "<think></think><answer></answer>",
        dict(balanced=0.1),
        0.1,  # no answer credit, no credit for closing an empty think: only the balance
    ),
    (
        "exploit with whitespace and punctuation",
        "",
        "<think>   </think><answer> . </answer>",
        dict(balanced=0.1),
        0.1,
    ),
    (
        "pre-filled think, straight to a call: no think term",
        "<think>\n",
        CALL,
        dict(anchor_unclosed=-0.3),
        0.0,
    ),
    (
        "pre-filled think closed at once, then a call: no think term",
        "<think>\n",
        "</think>\n" + CALL,
        dict(balanced=0.1),
        0.1,
    ),
    (
        "pre-filled think closed at once, then an answer: no close, no flow",
        "<think>\n",
        "</think>\n<answer>B</answer>",
        dict(answer=0.3, answer_close=0.2, balanced=0.1),
        0.6,
    ),
    (
        "a short think before the call earns no think-before-call",
        "<think>\n",
        "Crop it.</think>" + CALL,
        dict(balanced=0.1),
        0.1,
    ),
    (
        "tags inside a think are not reasoning",
        "",
        "<think><answer></answer><answer></answer></think><answer>B</answer>",
        dict(answer=0.3, answer_close=0.2, balanced=0.1),
        0.6,
    ),
    (
        "plain text earns nothing",
        "",
        "B",
        dict(),
        0.0,
    ),
    (
        "multi-turn episode",
        "<think>\n",
        f"Look at 1-2 s first.</think>{CALL}<think>{THINK}</think><answer>C</answer>",
        dict(
            think=0.2,
            answer=0.3,
            answer_close=0.2,
            think_before_call=0.3,
            balanced=0.1,
            anchor_close=0.4,
            anchor_flow=0.3,
        ),
        1.0,
    ),
    (
        "nested think is unbalanced and leaves one open",
        "",
        f"<think><think>{THINK}</think><answer>B</answer>",
        dict(
            think=0.2,
            answer=0.3,
            answer_close=0.2,
            anchor_close=0.4,
            anchor_flow=0.3,
            anchor_unclosed=-0.3,
        ),
        0.9,  # 0.7 + 0.5 * 0.4
    ),
    (
        "flow needs the answer after </think>",
        "",
        f"<answer>B</answer><think>{THINK}</think>",
        dict(think=0.2, answer=0.3, answer_close=0.2, balanced=0.1, anchor_close=0.4),
        1.0,  # 0.8 + 0.2
    ),
]

TERMS = (
    "think",
    "answer",
    "answer_close",
    "think_before_call",
    "balanced",
    "anchor_close",
    "anchor_flow",
    "anchor_unclosed",
)


@pytest.mark.parametrize("name, prefix, completion, nonzero, fmt", TABLE, ids=[r[0] for r in TABLE])
def test_format_table(name, prefix, completion, nonzero, fmt):
    terms = format_terms(completion, RewardConfig(), prefix=prefix)
    for term in TERMS:
        assert getattr(terms, term) == pytest.approx(nonzero.get(term, 0.0)), term
    base, anchor = format_reward(completion, RewardConfig(), prefix=prefix)
    assert base == pytest.approx(sum(v for k, v in nonzero.items() if not k.startswith("anchor")))
    assert anchor == pytest.approx(sum(v for k, v in nonzero.items() if k.startswith("anchor")))
    assert format_score(base, anchor, RewardConfig()) == pytest.approx(fmt)


def test_anchor_lambda_and_vanilla():
    text = f"<think>{THINK}</think><answer>B</answer>"
    base, anchor = format_reward(text)
    assert (base, anchor) == (pytest.approx(0.8), pytest.approx(0.7))
    assert format_score(base, anchor, RewardConfig(anchor_lambda=0.5)) == pytest.approx(1.0)
    assert format_score(base, anchor, RewardConfig(anchor_lambda=0.1)) == pytest.approx(0.87)
    assert format_score(base, anchor, RewardConfig.vanilla()) == pytest.approx(0.8)


def test_the_vanilla_baseline_has_the_reference_baselines_format_weights():
    """The reference's vanilla GRPO runs its format reward in the default mode (its
    ``paravt/rl/rewards/format.py`` with ANSWER_SUFFIX off): think 0.3, answer 0.2, answer close
    0.1, with no anchor; PARA-GRPO's constrained mode pays 0.2 / 0.3 / 0.2 (docs/PROTOCOL.md
    §5.6). The packaged recipe states the same (tests/train/test_reward_config.py)."""
    vanilla, para = RewardConfig.vanilla(), RewardConfig()
    assert (vanilla.think_bonus, vanilla.answer_bonus, vanilla.answer_close_bonus) == (
        0.3,
        0.2,
        0.1,
    )
    assert (para.think_bonus, para.answer_bonus, para.answer_close_bonus) == (0.2, 0.3, 0.2)
    assert vanilla.anchor_lambda == 0.0 and not vanilla.token_anchor
    text = f"<think>{THINK}</think><answer>B</answer>"
    assert format_terms(text, vanilla).base == pytest.approx(0.3 + 0.2 + 0.1 + 0.1)
    assert format_terms(text, para).base == pytest.approx(0.2 + 0.3 + 0.2 + 0.1)
    assert RewardConfig().anchor_lambda == 0.5 and RewardConfig().format_weight == 1.0


def test_constants_come_from_config():
    cfg = RewardConfig(
        think_min_chars=3,
        think_min_words=1,
        think_bonus=0.01,
        answer_bonus=0.02,
        answer_close_bonus=0.03,
        think_before_call_bonus=0.04,
        balanced_bonus=0.05,
        anchor_close=0.06,
        anchor_flow=0.07,
        anchor_unclosed=-0.08,
    )
    t = format_terms(f"<think>it is red</think>{CALL}<think>x<answer>B</answer>", cfg)
    assert (t.think, t.answer, t.answer_close, t.think_before_call, t.balanced) == (
        0.01,
        0.02,
        0.03,
        0.04,
        0.0,
    )
    assert (t.anchor_close, t.anchor_flow, t.anchor_unclosed) == (0.06, 0.07, -0.08)


def test_only_the_assistant_prefill_of_a_full_prompt_counts():
    prompt = (
        "<|im_start|>system\nThink inside <think> and answer inside <answer> tags.<|im_end|>\n"
        "<|im_start|>user\nWhat happens?<|im_end|>\n<|im_start|>assistant\n<think>\n"
    )
    assert scored_text(prompt, "x") == "\n<think>\nx"
    whole = format_terms(THINK + "</think><answer>B</answer>", prefix=prompt)
    prefill = format_terms(THINK + "</think><answer>B</answer>", prefix="<think>\n")
    assert whole == prefill
    assert whole.balanced == 0.1 and whole.anchor_close == 0.4


def test_prefill_already_in_the_completion_is_counted_once():
    # the engine records turn 0 as pre-fill + generated text; the trainer also passes the pre-fill
    completion = "<think>\n" + THINK + "</think><answer>B</answer>"
    assert scored_text("<think>\n", completion) == completion
    assert format_terms(completion, prefix="<think>\n") == format_terms(completion)
    assert format_terms(completion, prefix="<think>\n").anchor_unclosed == 0.0


def test_non_string_completion():
    assert format_reward(None) == (0.0, 0.0)  # type: ignore[arg-type]


# --- think-before-call needs a call the parser accepted, outside <think>

HACK = "<think>\nI reason about the frames carefully. <tool_call></tool_call></think>\n<answer>B</answer>"


@pytest.mark.parametrize(
    "completion",
    [
        HACK,
        HACK.replace("<tool_call></tool_call>", ""),  # the same without the empty block
        HACK.replace("<tool_call></tool_call>", CALL),  # a well-formed call, but inside <think>
        HACK.replace("<tool_call></tool_call>", "<tool_code></tool_code>"),
        HACK.replace("</think>\n", "</think>\n<tool_call></tool_call>"),  # empty, outside think
    ],
)
def test_no_call_earns_no_think_before_call(completion):
    from paravt.rewards import compose

    terms = format_terms(completion)
    assert terms.think_before_call == 0.0
    cfg = RewardConfig.vanilla()
    r = compose("", completion, None, "B", "mcq", cfg=cfg)
    paid = cfg.think_bonus + cfg.answer_bonus + cfg.answer_close_bonus + cfg.balanced_bonus
    assert r.fmt_base == pytest.approx(paid) and r.fmt == pytest.approx(paid)  # no call term


def test_think_before_call_follows_r_tools_notion_of_a_call():
    text = f"<think>{THINK}</think>{CALL}"
    assert format_terms(text).think_before_call == 0.3  # read from the text alone
    assert format_terms(text, calls_made=True).think_before_call == 0.3
    # the engine says no call parsed or ran: R_tool pays 0, and so does this term
    assert format_terms(text, calls_made=False).think_before_call == 0.0
    # the first accepted call is in a later turn: a think in an earlier turn comes before it
    turns = [f"<think>{THINK}</think><tool_call>{{bad json</tool_call>", CALL]
    assert format_terms(turns).think_before_call == 0.3
    assert format_terms([CALL, f"<think>{THINK}</think>{CALL}"]).think_before_call == 0.0


# --- the answer terms score the final turn


def test_answer_terms_read_the_final_turn_only():
    tool_turn = f"<think>{THINK}</think><answer>A</answer>{CALL}"
    no_answer = f"<think>{THINK}</think>I still cannot tell."
    terms = format_terms([tool_turn, no_answer])
    assert (terms.answer, terms.answer_close, terms.anchor_flow) == (0.0, 0.0, 0.0)
    assert (terms.think, terms.think_before_call, terms.balanced, terms.anchor_close) == (
        0.2,
        0.3,
        0.1,
        0.4,
    )
    answered = format_terms([tool_turn, f"<think>{THINK}</think><answer>B</answer>"])
    assert (answered.answer, answered.answer_close, answered.anchor_flow) == (0.3, 0.2, 0.3)
    # the flow needs its think → answer inside the final turn
    flow_split = format_terms([f"<think>{THINK}</think>{CALL}", "<answer>B</answer>"])
    assert flow_split.answer == 0.3 and flow_split.anchor_flow == 0.0


def test_tags_pair_within_a_turn():
    # a think opened in turn 0 is not closed by turn 1's </think>: two turns, two faults
    terms = format_terms([f"<think>{THINK}{CALL}", f"{THINK}</think><answer>B</answer>"])
    assert terms.anchor_close == 0.0 and terms.anchor_unclosed == -0.3 and terms.balanced == 0.0


def test_every_turns_prefill_counts_once():
    turns = [f"{THINK}</think>{CALL}", f"{THINK}</think><answer>B</answer>"]
    with_prefill = [f"<think>\n{t}" for t in turns]
    # the engine records each turn with its pre-fill; a caller may also pass the bare turns
    assert format_terms(turns, prefix="<think>\n") == format_terms(with_prefill, prefix="<think>\n")
    assert format_terms(with_prefill, prefix="<think>\n") == format_terms(with_prefill)
    t = format_terms(with_prefill)
    assert t.anchor_unclosed == 0.0 and t.balanced == 0.1 and t.anchor_flow == 0.3


SPAM = "<|im_start|>" * 5  # the reference zeroes a completion under 300 characters holding five


@pytest.mark.parametrize(
    "completion, calls",
    [
        (SPAM, 0),  # nothing else: no think, no answer, the pre-fill left open
        (SPAM + CALL, 1),  # spam, then a call that ran
        (f"{THINK}</think>\n<answer>B</answer>{SPAM}", 0),  # a real answer, then spam
        (f"{THINK}</think>{SPAM}<answer>B</answer>", 0),
    ],
)
def test_im_start_spam_earns_nothing_the_same_episode_would_not_earn_without_it(completion, calls):
    """paravt keeps no short-circuit for ``<|im_start|>`` spam (docs/PROTOCOL.md §7.1): spam
    alone earns 0, and spam added to an episode never raises its reward."""
    from paravt.rewards import compose
    from paravt.schema.tools import ToolCounts

    ex = ToolCounts(parseable_calls=calls, executed_ok=calls)
    spammed = compose("<think>\n", completion, ex, "B", "mcq", ["x", "y", "z"])
    clean = compose("<think>\n", completion.replace(SPAM, ""), ex, "B", "mcq", ["x", "y", "z"])
    assert spammed.total <= clean.total + 1e-9
    if completion == SPAM:
        assert spammed.total == 0.0
