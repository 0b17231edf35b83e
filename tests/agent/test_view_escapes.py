"""``paravt infer``'s terminal view shows model text, never runs it: control characters and
ANSI escape sequences in a model's turn, a call's arguments, a question or a file name reach the
terminal as visible escapes (``\\x12``, ``\\x1b[31m``), not raw."""

from __future__ import annotations

import io

from paravt.agent.safe_text import visible
from paravt.agent.view import episode_view
from paravt.schema.episodes import CallRecord, EpisodeRecord, TurnRecord

NASTY = "\x12bell\x1b[31mRED\x1b]0;title\x07 \u202eevil\x9b2J"


def test_visible_escapes_every_control_and_keeps_plain_text():
    assert visible("plain text, ünïcode ✓") == "plain text, ünïcode ✓"
    assert visible(NASTY) == "\\x12bell\\x1b[31mRED\\x1b]0;title\\x07 \\u202eevil\\x9b2J"
    assert visible("a\nb\tc", keep_lines=True) == "a\nb\tc"
    assert visible("a\nb") == "a\\x0ab"


def test_the_terminal_view_shows_model_text_escaped():
    rec = EpisodeRecord(
        id="ep" + NASTY,
        video="/v/clip" + NASTY + ".mp4",
        question="Q" + NASTY,
        question_type="mcq",
        options=["red" + NASTY, "blue"],
        gold="A" + NASTY,
        mode="parallel",
        evidence="frames",
        prediction="A" + NASTY,
        answer_source="answer_tag",
        turns=[TurnRecord(0, "<think>look" + NASTY + "</think><tool_call>x</tool_call>")],
        calls=[
            CallRecord(
                0,
                0,
                "crop_video",
                {"start_time": NASTY, "end_time": 3},
                "error",
                error="bad" + NASTY,
                error_kind="invalid_window",
            ),
        ],  # fmt: skip
    )
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, force_terminal=True, width=100, color_system="truecolor").print(
        episode_view(rec)
    )
    out = buf.getvalue()
    for raw in (
        "\x12",
        "\x07",
        "\x9b",
        "\u202e",
        "\x1b[31mRED",
        "\x1b]0;",
    ):  # rich adds its own colours
        assert raw not in out, repr(raw)
    for shown in ("\\x12bell", "\\x1b[31mRED", "\\u202eevil", "\\x1b]0;title\\x07"):
        assert out.count(shown) >= 5, shown  # id, video, question, option, thought, ...


def test_infer_quiet_prints_the_answer_and_the_error_escaped(capsys):
    """``paravt infer --quiet``: the answer alone on stdout, an error on stderr; both are a model's
    or a file's text, so both are shown escaped (and an error's ``[...]`` is not rich markup)."""
    from rich.console import Console

    from paravt.cli.cmd_infer import _emit

    ok = EpisodeRecord(
        id="a", video="v.mp4", question="Q", question_type="oe", options=None, gold=None,
        mode="parallel", evidence="frames", prediction="red" + NASTY,
    )  # fmt: skip
    bad = EpisodeRecord(
        id="b" + NASTY, video="v.mp4", question="Q", question_type="oe", options=None, gold=None,
        mode="parallel", evidence="frames", status="error", error="[bold]broken[/]" + NASTY,
    )  # fmt: skip
    err = io.StringIO()
    console = Console(file=err, width=200, highlight=False)  # no colours: the text as shown
    _emit([ok, bad], {}, console, console, False, False, True, single=False)
    out = capsys.readouterr().out
    assert out.splitlines() == [visible("red" + NASTY), ""]
    shown = err.getvalue()
    assert "\x12" not in shown and "\x1b]0;" not in shown and "\u202e" not in shown
    assert "[bold]broken[/]" in shown and "\\x12bell" in shown
