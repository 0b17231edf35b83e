"""The turn parser (docs/PROTOCOL.md §4): per-block calls and errors, think handling, answer
extraction."""

from __future__ import annotations

import json
import logging
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paravt import grammar
from paravt.grammar import (
    DEFAULT_TOOLS,
    ERROR_KINDS,
    CallError,
    ParsedTurn,
    ToolCall,
    extract_answer,
    parse_turn,
)
from paravt.rewards import compose


def call(s, e, **extra):
    args = {"video_path": "v.mp4", "start_time": s, "end_time": e, **extra}
    return "<tool_call>" + json.dumps({"name": "crop_video", "arguments": args}) + "</tool_call>"


def ordered(turn: ParsedTurn):
    """Calls and errors merged in text order, as the engine answers them."""
    items = [("call", c.index, c) for c in turn.calls]
    items += [("error", e.index, e) for e in turn.errors]
    return [(kind, obj) for kind, _, obj in sorted(items, key=lambda x: x[1])]


def test_parallel_calls_parse_in_order():
    text = "<think>Check three windows.</think>\n" + call(0, 10) + "\n" + call(20, 30)
    text += call(40, 50)
    turn = parse_turn(text)
    assert [(c.arguments["start_time"], c.arguments["end_time"]) for c in turn.calls] == [
        (0, 10),
        (20, 30),
        (40, 50),
    ]
    assert [c.index for c in turn.calls] == [0, 1, 2]
    assert all(c.name == "crop_video" and c.terminated for c in turn.calls)
    assert turn.errors == [] and turn.ignored == []
    assert turn.is_tool_turn
    assert turn.answer is None and not turn.has_answer_tag
    assert turn.think == "Check three windows."
    # raw and span point back into the text
    for c in turn.calls:
        assert text[c.span[0] : c.span[1]] == c.raw
        assert c.raw.startswith("<tool_call>") and c.raw.endswith("</tool_call>")


def test_one_bad_block_does_not_void_its_siblings():
    text = (
        "<think>plan the windows</think>"
        + call(1, 2)
        + "<tool_call>{not json}</tool_call>"
        + call(3, 4)
        + '<tool_call>{"name": "zoom_video", "arguments": {}}</tool_call>'
        + '<tool_call>{"name": "crop_video", "arguments": [1, 2]}</tool_call>'
        + '<tool_call>{"name": "crop_video"}</tool_call>'
        + call(5, 6)
    )
    turn = parse_turn(text)
    seq = ordered(turn)
    assert [k for k, _ in seq] == ["call", "error", "call", "error", "error", "error", "call"]
    kinds = [e.kind for e in turn.errors]
    assert kinds == ["invalid_json", "unknown_tool", "bad_arguments", "bad_arguments"]
    assert "zoom_video" in turn.errors[1].message and "crop_video" in turn.errors[1].message
    assert "missing 'arguments'" in turn.errors[3].message
    assert [c.arguments["start_time"] for c in turn.calls] == [1, 3, 5]
    assert turn.errors[0].raw == "<tool_call>{not json}</tool_call>"


@pytest.mark.parametrize(
    "body, expected",
    [
        # arguments as a JSON string
        (
            '{"name": "crop_video", "arguments": "{\\"start_time\\": 5, \\"end_time\\": 9}"}',
            [{"start_time": 5, "end_time": 9}],
        ),
        # OpenAI function wrapper and 'parameters'
        (
            '{"type": "function", "function": {"name": "crop_video", "arguments": {"start_time": 1,'
            ' "end_time": 2}}}',
            [{"start_time": 1, "end_time": 2}],
        ),
        (
            '{"name": "crop_video", "parameters": {"start": "0:30", "end": "1:00"}}',
            [{"start": "0:30", "end": "1:00"}],
        ),
        # several objects in one block: back to back, newline separated, a JSON list
        (
            '{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}'
            '{"name": "crop_video", "arguments": {"start_time": 3, "end_time": 4}}',
            [{"start_time": 1, "end_time": 2}, {"start_time": 3, "end_time": 4}],
        ),
        (
            '{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}\n'
            '{"name": "crop_video", "arguments": {"start_time": 3, "end_time": 4}}',
            [{"start_time": 1, "end_time": 2}, {"start_time": 3, "end_time": 4}],
        ),
        (
            '[{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}},'
            ' {"name": "crop_video", "arguments": {"start_time": 3, "end_time": 4}}]',
            [{"start_time": 1, "end_time": 2}, {"start_time": 3, "end_time": 4}],
        ),
        # code fence and single-quoted Python dict literal
        (
            '```json\n{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}\n```',
            [{"start_time": 1, "end_time": 2}],
        ),
        (
            "{'name': 'crop_video', 'arguments': {'start_time': 1.5, 'end_time': 2}}",
            [{"start_time": 1.5, "end_time": 2}],
        ),
        # Python-call form inside <tool_call>
        ('crop_video(start_time="1:05", end_time=90)', [{"start_time": "1:05", "end_time": 90}]),
    ],
)
def test_accepted_call_forms(body, expected):
    turn = parse_turn(f"<think>look</think><tool_call>{body}</tool_call>")
    assert turn.errors == []
    assert [c.arguments for c in turn.calls] == expected
    assert [c.index for c in turn.calls] == list(range(len(expected)))


def test_python_call_form_in_tool_code_uses_literals_only():
    text = (
        "<think>two windows</think><tool_code>crop_video(start_time=10, end_time=20.5)\n"
        "crop_video(start_time=-1, end_time='0:40')\n"
        "crop_video(start_time=__import__('os').getpid(), end_time=3)\n"
        "crop_video('v.mp4', 1, 2, 3)\n"
        "crop_video(**{'start_time': 1})</tool_code>"
    )
    turn = parse_turn(text)
    assert [c.arguments for c in turn.calls] == [
        {"start_time": 10, "end_time": 20.5},
        {"start_time": -1, "end_time": "0:40"},
    ]
    assert [e.kind for e in turn.errors] == ["bad_arguments"] * 3
    assert "start_time" in turn.errors[0].message and "expression" in turn.errors[0].message
    # too many positionals (a fitting number of them is a call)
    assert turn.errors[1].message.startswith("crop_video: takes at most 3 positional")
    assert [e.index for e in turn.errors] == [2, 3, 4]


@pytest.mark.parametrize(
    "body, kind",
    [
        ("crop_video(start_time=1, end_time=", "invalid_syntax"),
        ("crop_video(start_time=1) + 2", "invalid_syntax"),
        ("import os", "invalid_json"),
        ("", "invalid_json"),
        ("   ", "invalid_json"),
        ("just words", "invalid_json"),
        ('"a string"', "invalid_json"),
        ('{"name": "", "arguments": {}}', "unknown_tool"),
        ('{"arguments": {"start_time": 1}}', "unknown_tool"),
        ('{"name": "crop_video", "arguments": "not json"}', "bad_arguments"),
        ('{"name": "crop_video", "arguments": "[1, 2]"}', "bad_arguments"),
        ('{"name": "crop_video", "arguments": 7}', "bad_arguments"),
        ("open_file(path='x')", "unknown_tool"),
    ],
)
def test_error_kinds(body, kind):
    turn = parse_turn(f"<tool_call>{body}</tool_call>")
    assert turn.calls == []
    assert [e.kind for e in turn.errors] == [kind]
    assert turn.errors[0].message
    assert turn.is_tool_turn
    assert set(e.kind for e in turn.errors) <= set(ERROR_KINDS)


def test_trailing_garbage_after_a_good_object_is_one_call_and_one_error():
    turn = parse_turn(
        '<tool_call>{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}}'
        "</tool_call>"
    )
    assert len(turn.calls) == 1
    assert [e.kind for e in turn.errors] == ["invalid_json"]
    assert turn.errors[0].index == 1


def test_unterminated_last_block():
    complete = '{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}'
    # stopped on the </tool_call> stop string: body complete → accepted, flagged
    turn = parse_turn("<think>go</think>" + call(0, 5) + "<tool_call>" + complete)
    assert len(turn.calls) == 2 and turn.calls[1].terminated is False
    assert turn.errors == []
    # cut off mid-object → an 'unterminated' error, the first call still stands
    turn = parse_turn("<think>go</think>" + call(0, 5) + '<tool_call>{"name": "crop_video", "argu')
    assert len(turn.calls) == 1
    assert [e.kind for e in turn.errors] == ["unterminated"]
    assert "</tool_call>" in turn.errors[0].message


def test_block_without_closer_ends_at_next_opener():
    turn = parse_turn(
        '<tool_call>{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}\n'
        + call(3, 4)
    )
    assert [c.arguments["start_time"] for c in turn.calls] == [1, 3]
    assert [c.terminated for c in turn.calls] == [False, True]


def test_calls_inside_think_are_ignored_and_reported():
    text = "<think>maybe " + call(1, 2) + " hmm</think>" + call(3, 4) + "<answer>B</answer>"
    turn = parse_turn(text)
    assert [c.arguments["start_time"] for c in turn.calls] == [3]
    assert [e.kind for e in turn.ignored] == ["inside_think"]
    assert turn.errors == []
    assert turn.calls[0].index == 0  # ignored calls do not take an index
    # only think-calls: not a tool turn, so the answer is final
    turn = parse_turn("<think>maybe " + call(1, 2) + "</think><answer>C</answer>")
    assert not turn.is_tool_turn and turn.answer == "C" and len(turn.ignored) == 1


def test_prefilled_think_region_starts_at_text_start():
    # the prompt pre-filled "<think>", so the completion starts inside the reasoning
    turn = parse_turn("I could crop " + call(1, 2) + " but no.</think>" + call(5, 9))
    assert [c.arguments["start_time"] for c in turn.calls] == [5]
    assert len(turn.ignored) == 1
    assert turn.think.startswith("I could crop")


def test_unclosed_think_ends_at_first_tool_block():
    turn = parse_turn("<think>I should look at 1-2s " + call(1, 2))
    assert len(turn.calls) == 1 and turn.ignored == []


@pytest.mark.parametrize(
    "text, answer",
    [
        ("<think>r</think><answer> B. the dog </answer> trailing", "B. the dog"),
        ("<answer>first</answer><answer>second</answer>", "first"),
        ("<think>r</think>\n\nC<|im_end|>", "C"),
        ("<think>r</think>" + call(1, 2) + "\nfinal words ", "final words"),
        ("<think>r</think>" + call(1, 2), ""),
        # no tags: all of the text, never only its last line (was "The answer
        # is D.")
        ("line one\n\nThe answer is D.\n\n", "line one\n\nThe answer is D."),
        ("D. 1633\n\nThe video shows a clock.", "D. 1633\n\nThe video shows a clock."),
        ("<think>r</think>\nD\nBecause the dog leaves.\n", "D\nBecause the dog leaves."),
        (
            "Start time: 6.60s\n" + call(1, 2) + "End time: 15.21s",
            "Start time: 6.60s\nEnd time: 15.21s",
        ),
        ("<answer>unclosed answer", "unclosed answer"),
        ("<think>x <answer>A</answer></think><answer>B</answer>", "B"),
        ("", ""),
        ("   \n  ", ""),
    ],
)
def test_extract_answer(text, answer):
    assert extract_answer(text) == answer


def test_answer_fields_on_parsed_turn():
    t = parse_turn("<think>r</think><answer></answer>")
    assert t.answer == "" and t.has_answer_tag and t.answer_closed
    t = parse_turn("<think>r</think><answer>B")
    assert t.answer == "B" and t.has_answer_tag and not t.answer_closed
    t = parse_turn("<think>r</think>")
    assert t.answer is None and not t.has_answer_tag
    # a tool turn's answer is extracted but the turn is still a tool turn
    t = parse_turn("<think>r</think>" + call(1, 2) + "<answer>A</answer>")
    assert t.is_tool_turn and t.answer == "A"


def test_known_tools_is_a_parameter():
    text = '<tool_call>{"name": "zoom", "arguments": {"x": 1}}</tool_call>'
    assert parse_turn(text).errors[0].kind == "unknown_tool"
    turn = parse_turn(text, tools={"zoom", "crop_video"})
    assert [c.name for c in turn.calls] == ["zoom"]
    assert DEFAULT_TOOLS == frozenset({"crop_video"})


def test_non_string_input_does_not_raise():
    assert parse_turn(None).calls == []  # type: ignore[arg-type]
    assert extract_answer(None) == ""  # type: ignore[arg-type]


_fragments = st.sampled_from(
    [
        "<think>",
        "</think>",
        "<answer>",
        "</answer>",
        "<tool_call>",
        "</tool_call>",
        "<tool_code>",
        "</tool_code>",
        "{",
        "}",
        "[",
        "]",
        '"name"',
        ":",
        ",",
        '"crop_video"',
        '"arguments"',
        "crop_video(",
        ")",
        "start_time=",
        "1:30",
        "12.5",
        "\n",
        "```",
        "'",
        '{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}',
        "\\",
        "**",
        "<|im_end|>",
        "A",
        " ",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), st.lists(_fragments, max_size=40).map("".join)))
def test_never_raises_and_is_consistent(text):
    turn = parse_turn(text)
    assert isinstance(turn, ParsedTurn)
    assert all(isinstance(c, ToolCall) and isinstance(c.arguments, dict) for c in turn.calls)
    assert all(isinstance(e, CallError) and e.kind in ERROR_KINDS for e in turn.errors)
    assert all(e.kind == "inside_think" for e in turn.ignored)
    indices = sorted([c.index for c in turn.calls] + [e.index for e in turn.errors])
    assert indices == list(range(len(indices)))
    assert turn.is_tool_turn == bool(turn.calls or turn.errors)
    assert all(c.name in DEFAULT_TOOLS for c in turn.calls)
    assert isinstance(extract_answer(text), str)
    if turn.answer is not None:
        assert turn.answer == extract_answer(text)


@pytest.mark.parametrize(
    "body",
    [
        "[" * 5000 + "]" * 5000,
        "{" * 5000,
        "crop_video(start_time=" + "(" * 5000 + "1" + ")" * 5000 + ")",
        '{"name": "crop_video", "arguments": {"start_time": ' + "9" * 5000 + "}}",
        "crop_video(start_time=" + "9" * 5000 + ")",
        "{'a': " * 3000,
    ],
)
def test_pathological_blocks_become_errors(body):
    turn = parse_turn(f"<tool_call>{body}</tool_call>" + call(1, 2))
    assert turn.errors and all(e.kind in ERROR_KINDS for e in turn.errors)
    assert [c.arguments["start_time"] for c in turn.calls] == [1]


# -- call forms the model writes -------------------------------------------


def test_positional_arguments_take_the_schema_order():
    turn = parse_turn('<tool_code>crop_video("x", 10, 20)</tool_code>')
    assert turn.errors == []
    assert [c.arguments for c in turn.calls] == [
        {"video_path": "x", "start_time": 10, "end_time": 20}
    ]
    # positionals first, keywords after, as in Python
    turn = parse_turn('<tool_code>crop_video("x", 10, end_time="0:40")</tool_code>')
    assert turn.calls[0].arguments == {"video_path": "x", "start_time": 10, "end_time": "0:40"}


@pytest.mark.parametrize(
    "body, words",
    [
        ('crop_video("x", 10, 20, 30)', "takes at most 3 positional arguments"),
        ('crop_video("x", 10, start_time=5)', "'start_time' is given twice"),
        ("crop_video(*[1, 2])", "*args is not accepted"),
    ],
)
def test_bad_positional_calls_are_errors_that_name_the_tool(body, words):
    turn = parse_turn(f"<tool_code>{body}</tool_code>")
    assert turn.calls == []
    assert [e.kind for e in turn.errors] == ["bad_arguments"]
    assert turn.errors[0].message.startswith("crop_video: ")
    assert words in turn.errors[0].message


def test_print_wrapper_is_unwrapped_and_errors_name_the_called_tool():
    turn = parse_turn(
        '<tool_code>print(crop_video(video_path="x", start_time=10, end_time=20))</tool_code>'
    )
    assert turn.errors == []
    assert [(c.name, c.arguments) for c in turn.calls] == [
        ("crop_video", {"video_path": "x", "start_time": 10, "end_time": 20})
    ]
    turn = parse_turn('<tool_code>print(crop_video("x", 1, 2, 3))</tool_code>')
    assert turn.errors[0].message.startswith("crop_video: ")
    assert "print" not in turn.errors[0].message
    turn = parse_turn("<tool_code>print(zoom_in(t=3))</tool_code>")
    assert turn.errors[0].kind == "unknown_tool" and "'zoom_in'" in turn.errors[0].message


@pytest.mark.parametrize(
    "body",
    [
        """crop_video(video_path="x", start_time=10, end_time=20.0')""",
        """crop_video(video_path="x", start_time=10, end_time=20.0")""",
        """print(crop_video(video_path="x", start_time=10, end_time=20.0'))""",
    ],
)
def test_stray_trailing_quote_is_tolerated(body):
    turn = parse_turn(f"<tool_code>{body}</tool_code>")
    assert turn.errors == []
    assert turn.calls[0].arguments == {"video_path": "x", "start_time": 10, "end_time": 20.0}


def test_a_quote_that_belongs_to_a_string_is_kept():
    body = "crop_video(video_path='x)', start_time=1, end_time=2)"
    turn = parse_turn(f"<tool_code>{body}</tool_code>")
    assert turn.calls[0].arguments["video_path"] == "x)"


@pytest.mark.parametrize(
    "body",
    [
        "crop_video(start_time=1and 2, end_time=20)",
        "crop_video(start_time=0x1for, end_time=20)",
        "{'name': 'crop_video', 'arguments': {'start_time': 1if 1 else 2}}",
    ],
)
def test_ast_syntax_warnings_never_reach_the_user(body, capfd):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        turn = parse_turn(f"<tool_code>{body}</tool_code>")
    assert turn.errors  # still reported to the model as a tool error
    assert [str(w.message) for w in caught] == []
    assert "SyntaxWarning" not in capfd.readouterr().err


@pytest.mark.parametrize("text", ["<tool_call>'',", "<tool_call>('a', ('b', 'c'))</tool_call>"])
def test_a_python_tuple_in_a_block_is_an_error_not_a_crash(text):
    """A block whose body reads as a Python tuple (found by the fuzz test) is one tool error."""
    turn = parse_turn(text)
    assert turn.calls == [] and len(turn.errors) == 1


def test_a_parser_bug_is_logged_and_is_not_blamed_on_the_model(monkeypatch, caplog):
    """An unexpected exception inside the block parser gets its own kind (not ``invalid_json``),
    is logged with its traceback, and spoils only its own block."""
    real = grammar._parse_block

    def buggy(body, known):
        if "13" in body:
            raise KeyError("start_time")
        return real(body, known)

    monkeypatch.setattr(grammar, "_parse_block", buggy)
    text = (
        '<tool_call>{"name": "crop_video", "arguments": {"start_time": 1, "end_time": 2}}'
        "</tool_call>\n"
        '<tool_call>{"name": "crop_video", "arguments": {"start_time": 13, "end_time": 14}}'
        "</tool_call>"
    )
    with caplog.at_level(logging.ERROR, logger="paravt.grammar"):
        turn = parse_turn(text)
    assert [c.index for c in turn.calls] == [0]
    [err] = turn.errors
    assert err.kind == "parser_error" and err.kind in ERROR_KINDS and err.index == 1
    assert "KeyError" in err.message and "internal error" in err.message
    [rec] = [r for r in caplog.records if r.name == "paravt.grammar"]
    assert rec.levelno == logging.ERROR and rec.exc_info[0] is KeyError


# -- an unclosed <think> holds no answer ---------------------------------------------------------
# What PARA-GRPO found on the toy task (experiments/toy_paradox/LOG.md, "Under the reader as it
# was"): the policy learned to name the colour inside a <think> it never closed, and the
# whole-text fallback read that reasoning as the answer, so the option whose text it contained
# scored as chosen.
HACKED = "<think>\nThe windows frames show a yellow square.\nA.\nB.\nB</answer>"


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        (HACKED, ""),
        ("<think>\nstill thinking", ""),
        ("<think>\nlook again<tool_call>{}</tool_call>\nC", "C"),  # text after the block
        ("<think>\ndone</think>\nB", "B"),
        ("pre-filled opener</think>D", "D"),
        ("no tags at all: B", "no tags at all: B"),
    ],
)
def test_an_unclosed_think_is_reasoning_not_an_answer(text, answer):
    assert extract_answer(text) == answer


def test_an_option_named_in_unclosed_reasoning_earns_no_accuracy():
    options = ["blue", "yellow", "red", "cyan"]
    score = compose("", HACKED, None, "B", "mcq", options)
    assert score.acc == 0.0
    assert (
        compose("", "<think>\nyellow</think>\n<answer>B</answer>", None, "B", "mcq", options).acc
        == 1.0
    )
