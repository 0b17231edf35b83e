"""Prompt files: packaged, filled per mode and question type, replaceable verbatim."""

from __future__ import annotations

import json

import pytest
from agent_helpers import small_config

from paravt.agent.engine import EpisodeEngine
from paravt.agent.prompts import format_options, load_prompts, tool_schema
from paravt.backends.scripted import ScriptedBackend
from paravt.errors import UserError
from paravt.schema.episodes import EpisodeInput


def test_system_prompts_per_mode():
    p = load_prompts()
    par = p.system("parallel", max_turns=3, max_parallel=5)
    assert json.dumps(tool_schema()) in par and "At most 5 calls run per turn" in par
    assert "<think>" in par and "<answer>" in par and "<tool_call>" in par and "$" not in par
    seq = p.system("sequential", max_turns=2, max_parallel=5)
    assert "Only one call runs per turn" in seq and "2 turns" in seq
    direct = p.system("direct", 3, 5)
    assert "crop_video" not in direct and "<answer>" in direct


def test_user_turn_frames_timestamps_options_and_instructions():
    p = load_prompts()
    parts = p.user_content([0.0, 12.34], "What happens?", ["He sits", "He runs"], "mcq")
    assert parts[:4] == [
        {"type": "text", "text": "<0.0 seconds>"},
        {"type": "image"},
        {"type": "text", "text": "<12.3 seconds>"},
        {"type": "image"},
    ]
    text = parts[-1]["text"]
    assert "Question: What happens?\nA. He sits\nB. He runs\n" in text and "letter" in text
    bare = p.user_content([0.0, 1.0], "When?", None, "tvg", timestamps=False)
    assert [x["type"] for x in bare] == ["image", "image", "text"]
    assert "[start, end]" in bare[-1]["text"] and "A." not in bare[-1]["text"]
    assert "few words" in p.question_text("Who?", None, "oe")
    assert format_options(["(A) red", "B. blue", "green"]) == "(A) red\nB. blue\nC. green\n"


def test_forced_answer_and_subagent_prompt():
    p = load_prompts()
    assert "letter" in p.forced_answer("mcq") and "[start, end]" in p.forced_answer("tvg")
    sub = p.subagent_content([2.0, 4.0], 2.0, 4.5, "Who opens the door?")
    assert sub[0] == {"type": "text", "text": "<2.0 seconds>"}
    assert "2.0s to 4.5s" in sub[-1]["text"] and "Who opens the door?" in sub[-1]["text"]


def test_system_prompt_file_replaces_the_prompt_verbatim(tmp_path, q3_processor, pancake):
    f = tmp_path / "released.txt"
    f.write_text("You are ParaVT. Costs ${max_turns} and $5, kept as written.\n")
    backend = ScriptedBackend(["<answer>A</answer>"], processor=q3_processor)
    cfg = small_config(system_prompt=str(f), timestamps=False)
    [rec] = EpisodeEngine(backend, cfg).run([EpisodeInput("s", pancake, "Q?", ["a", "b"])])
    assert (
        rec.messages[0]["content"] == "You are ParaVT. Costs ${max_turns} and $5, kept as written."
    )
    assert not any(p.get("text", "").startswith("<") for p in rec.messages[1]["content"][:-1])
    with pytest.raises(UserError, match="not found"):
        load_prompts(tmp_path / "nope.txt")
    (tmp_path / "empty.txt").write_text("  \n")
    with pytest.raises(UserError, match="empty"):
        load_prompts(tmp_path / "empty.txt")


@pytest.mark.parametrize("renders_tools", [True, False])
def test_a_system_prompt_file_is_verbatim_under_native_tool_prompt(tmp_path, renders_tools):
    """A system prompt file says how the tool is presented: ``native`` adds neither ``tools=`` nor
    a Hermes block to it, so the schema is never shown twice (the toy experiment's prompts)."""
    f = tmp_path / "own.txt"
    f.write_text("Call crop_video(start_time, end_time) in <tool_call> blocks.\n")
    prompts = load_prompts(f)
    text, tools = prompts.system_and_tools("parallel", 3, 5, "native", renders_tools)
    assert text == "Call crop_video(start_time, end_time) in <tool_call> blocks."
    assert tools is None
    default_text, default_tools = load_prompts().system_and_tools(
        "parallel", 3, 5, "native", renders_tools
    )
    assert (default_tools is not None) == renders_tools
    assert renders_tools or "<tools>" in default_text


# -- option letters: one definition for prompts, extraction and scoring -------------------------


def test_prompt_letters_are_the_letters_extraction_reads():
    from paravt.rewards.answers import extract_mcq_letter
    from paravt.schema.questions import LETTERS

    ten = [f"choice {i}" for i in range(len(LETTERS))]
    lines = format_options(ten).splitlines()
    assert [line[0] for line in lines] == list(LETTERS)
    assert extract_mcq_letter(LETTERS[-1], ten) == LETTERS[-1]


def test_more_options_than_letters_is_a_typed_error_where_the_question_is_built():
    from paravt.schema.questions import TooManyOptionsError

    eleven = [f"choice {i}" for i in range(11)]
    too_many = r"question 'Which clip\?' has 11 options; at most 10"
    with pytest.raises(TooManyOptionsError, match=too_many):
        load_prompts().question_text("Which clip?", eleven, "mcq")
    with pytest.raises(TooManyOptionsError, match=r"episode 'q7' has 11 options.*A–J"):
        EpisodeInput(id="q7", video="v.mp4", question="Which clip?", options=eleven)
    assert issubclass(TooManyOptionsError, UserError)


def test_one_definition_of_letters_and_question_types():
    """The vocabulary has one home, the schema floor; every room reads that one object."""
    from paravt import schema
    from paravt.agent import prompts
    from paravt.data import questions
    from paravt.eval import samples
    from paravt.rewards import answers
    from paravt.schema import episodes

    assert samples.LETTERS is answers.LETTERS is prompts.LETTERS is schema.LETTERS
    assert samples.QUESTION_TYPES is questions.QUESTION_TYPES is episodes.QUESTION_TYPES
    assert episodes.QUESTION_TYPES is answers.QUESTION_TYPES is schema.QUESTION_TYPES


# -- the user template (engine.user_template, --user-template) ---------------------------------

#: A template with the fields the reference's user turn is made of (the question with its lettered
#: options and answer instruction, then a sentence naming the video file), in our own wording.
REFERENCE_FIELDS = "${question}\n${options}${instruction} Video file for crop_video: ${video_name}"


def test_a_user_template_with_the_reference_fields_renders_as_expected(
    tmp_path, q3_processor, pancake
):
    template = tmp_path / "user.txt"
    template.write_text(REFERENCE_FIELDS + "\n")
    backend = ScriptedBackend(["<answer>A</answer>"], processor=q3_processor)
    cfg = small_config(user_template=str(template), timestamps=False)
    question = EpisodeInput("s", pancake, "What does the man do? ", ["He flips it", "He sits"])
    [rec] = EpisodeEngine(backend, cfg).run([question])
    user = rec.messages[1]["content"]
    assert [p["type"] for p in user] == ["image"] * (len(user) - 1) + ["text"]
    instruction = load_prompts().instruction("mcq")
    assert user[-1]["text"] == (
        "\nWhat does the man do?\nA. He flips it\nB. He sits\n"
        f"{instruction} Video file for crop_video: decord__flipping_a_pancake.mkv"
    )
    # the other fields, and a literal dollar
    every = tmp_path / "every.txt"
    every.write_text("$question_type|${video_path}|${question}|$$5")
    text = load_prompts(user_template_file=every).question_text("When?", None, "tvg", "/v/a.mp4")
    assert text == "tvg|/v/a.mp4|When?|$5"
    # without a template, the packaged layout is unchanged
    assert load_prompts().question_text(
        "Q?", None, "oe", "/v/a.mp4"
    ) == load_prompts().question_text("Q?", None, "oe")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("${question} ${answer}", r"unknown field \$\{answer\}.*\$\{question\}, \$\{options\}"),
        ("Look at ${video_name}.", r"no \$\{question\} field"),
        ("${question} costs $5", r"'\$' at character 18 starts no field.*\$\{options\}"),
        ("  \n", "empty"),
    ],
)
def test_a_bad_user_template_is_a_typed_error_naming_the_field(tmp_path, text, message):
    from paravt.agent.prompts import UserTemplateError

    f = tmp_path / "user.txt"
    f.write_text(text)
    with pytest.raises(UserTemplateError, match=message) as info:
        load_prompts(user_template_file=f)
    assert isinstance(info.value, UserError)
    with pytest.raises(UserTemplateError, match="not found"):
        load_prompts(user_template_file=tmp_path / "nope.txt")


def test_a_user_template_without_options_is_refused_before_any_episode(
    tmp_path, q3_processor, pancake
):
    from paravt.agent.prompts import UserTemplateError

    f = tmp_path / "user.txt"
    f.write_text("${question} ${instruction}")
    calls = []

    def script(req):
        calls.append(req)
        return "<answer>A</answer>"

    backend = ScriptedBackend(script, processor=q3_processor)
    engine = EpisodeEngine(backend, small_config(user_template=str(f)))
    open_q = EpisodeInput("open", pancake, "What happens?", None, "oe")
    mcq = EpisodeInput("mc", pancake, "What happens?", ["a", "b"])
    with pytest.raises(UserTemplateError, match=r"no \$\{options\} field.*'mc'"):
        engine.run([open_q, mcq])
    assert calls == []  # refused at start: nothing was generated
    [rec] = engine.run([open_q])  # a question without options needs no ${options}
    assert rec.status == "ok" and rec.messages[1]["content"][-1]["text"].endswith(
        "What happens? " + load_prompts().instruction("oe")
    )
