"""PARA-GRPO rewards (docs/PROTOCOL.md §5) as plain functions of their inputs: no environment
variables, no global state, no model or tokenizer loading (a tokenizer is passed in where one is
needed).

Modules: ``answers`` (answer reading and R_acc), ``format`` (R_fmt with the anchor term), ``tool``
(R_tool from execution counts), ``token_anchor`` (per-token bonus at structural tokens),
``compose`` (the total with its breakdown), ``config`` (``RewardConfig``).
"""

from paravt.errors import deprecated
from paravt.rewards import tool as _tool
from paravt.rewards.answers import (
    FUNCTION_WORDS,
    accuracy,
    answer_text,
    bonus_earned,
    exact_match,
    extract_mcq_letter,
    mcq_gold_letter,
    oe_content_words,
    oe_hedged,
    oe_phrases,
    oe_tokens,
    offers_alternatives,
    overlap_f1,
    parse_span,
    temporal_iou,
    temporal_iou_hull,
    token_f1,
)
from paravt.rewards.compose import RewardBreakdown, compose, final_answer_text
from paravt.rewards.config import DEFAULT_TOKEN_ANCHOR_VALUES, RewardConfig
from paravt.rewards.format import (
    FormatTerms,
    format_reward,
    format_score,
    format_terms,
    open_think_turns,
    reasoning_words,
    scored_text,
    substantive_close_turns,
    visible_text,
)
from paravt.rewards.token_anchor import ANCHOR_TAGS, anchor_positions, anchor_token_bonus
from paravt.rewards.tool import tool_reward

__all__ = [
    "ANCHOR_TAGS",
    "DEFAULT_TOKEN_ANCHOR_VALUES",
    "FUNCTION_WORDS",
    "FormatTerms",
    "RewardBreakdown",
    "RewardConfig",
    "accuracy",
    "anchor_positions",
    "anchor_token_bonus",
    "answer_text",
    "bonus_earned",
    "compose",
    "exact_match",
    "extract_mcq_letter",
    "final_answer_text",
    "format_reward",
    "format_score",
    "format_terms",
    "mcq_gold_letter",
    "oe_content_words",
    "oe_hedged",
    "oe_phrases",
    "oe_tokens",
    "offers_alternatives",
    "open_think_turns",
    "overlap_f1",
    "parse_span",
    "reasoning_words",
    "scored_text",
    "substantive_close_turns",
    "temporal_iou",
    "temporal_iou_hull",
    "token_f1",
    "tool_reward",
    "visible_text",
]


#: the vocabulary that moved to the schema floor (``paravt.schema``): old name -> its home
_MOVED = {
    "LETTERS": "paravt.schema.questions",
    "QUESTION_TYPES": "paravt.schema.questions",
    "UnknownQuestionTypeError": "paravt.schema.questions",
    "ToolCounts": "paravt.schema.tools",
}


def __getattr__(name: str):
    """The deprecated names: the vocabulary that moved to ``paravt.schema``, and the reward's old
    record names (``paravt.rewards.tool``)."""
    if name in _MOVED:
        import importlib

        deprecated(f"paravt.rewards.{name}", f"use paravt.schema.{name}")
        return getattr(importlib.import_module(_MOVED[name]), name)
    return _tool.__getattr__(name)
