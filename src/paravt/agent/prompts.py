"""Load the prompt files (package data in ``agent/prompts/``) and render them into chat content.

Prompts are data, not code: the files hold our own wording with ``${name}`` placeholders
(``string.Template``), and this module fills them. The user turn is built as a list of chat content
parts — for each overview frame an optional ``<t seconds>`` text part then an image part — followed
by the question text, so the model's own chat template places the vision tokens.

``--system-prompt FILE`` replaces the system prompt verbatim (no placeholder filling), so a
released checkpoint's own prompt can be used unchanged. ``--user-template FILE``
(``engine.user_template``) replaces the text of the first user turn — what follows the overview
frames — with a ``string.Template`` of named fields (``USER_TEMPLATE_FIELDS``): the question, its
lettered options, the answer instruction, the video's path or file name. A template that names an
unknown field, or lacks a field a question needs (``question`` always, ``options`` for a question
with options), is a ``UserTemplateError`` when the run starts, before any episode.

The tool schema reaches the model exactly once, in one of two forms (``engine.tool_prompt``):
``paravt`` writes it into our wording (``Its definition: {json}``); ``native`` leaves it out of our
wording and hands it to the template's own ``tools=`` rendering, or — for a template without one
(Qwen2.5-VL's vision template) — appends a Hermes-style ``<tools>`` block to the system prompt,
the format the Qwen family's tool use was trained on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import Protocol

from paravt.errors import UserError
from paravt.schema.questions import LETTERS, QUESTION_TYPES, require_letterable
from paravt.tools.schema import TOOL_SCHEMA

__all__ = ["check_user_template", "load_prompts"]

#: The fields a user template (``engine.user_template``) may use, and what each holds.
USER_TEMPLATE_FIELDS = {
    "question": "the question text",
    "options": "the options lettered A., B., ... one a line (empty without options)",
    "instruction": "paravt's answer instruction for the question type",
    "video_path": "the video's path as the run was given it",
    "video_name": "the video's file name (the reference's video-path suffix uses it)",
    "question_type": "mcq, tvg or oe",
}


class UserTemplateError(UserError):
    """A user template file that cannot render the run's questions."""


def _field_list() -> str:
    return ", ".join("${" + k + "}" for k in USER_TEMPLATE_FIELDS)


def template_fields(text: str) -> set[str]:
    """The ``${name}`` / ``$name`` fields a ``string.Template`` text uses."""
    found = set()
    for m in Template.pattern.finditer(text):
        name = m.group("named") or m.group("braced")
        if name:
            found.add(name)
        elif m.group("invalid") is not None:
            raise UserTemplateError(
                f"user template: the '$' at character {m.start()} starts no field; write $$ for "
                "a literal dollar, or a field: " + _field_list()
            )
    return found


def load_user_template(path: str | Path) -> str:
    """Read a user template file and check its fields (unknown → ``UserTemplateError``)."""
    p = Path(path)
    text = _read_file(p, "user template", "--user-template", UserTemplateError)
    fields = template_fields(text)
    unknown = sorted(fields - set(USER_TEMPLATE_FIELDS))
    if unknown:
        raise UserTemplateError(
            f"user template {p} uses the unknown field ${{{unknown[0]}}}; the fields are "
            + _field_list()
        )
    if "question" not in fields:
        raise UserTemplateError(
            f"user template {p} has no ${{question}} field: every question needs it"
        )
    return text


def _read_file(p: Path, what: str, flag: str, error: type[UserError]) -> str:
    """A prompt file's text, stripped; a missing or empty file is ``error`` naming ``flag``."""
    if not p.is_file():
        raise error(f"{what} file not found: {p} (pass an existing text file to {flag})")
    text = p.read_text(encoding="utf-8").strip()
    if not text:
        raise error(f"{what} file {p} is empty; write the {what.split()[-1]} into it")
    return text


class ShownQuestion(Protocol):
    """What the user-template check reads of a question: its id and the options the model
    would be shown. ``EpisodeInput``, a training ``TrainRow`` and eval's shown form of a sample
    all have both."""

    @property
    def id(self) -> str: ...

    @property
    def options(self) -> list[str] | None: ...


def check_user_template(path: str | Path | None, questions: Iterable[ShownQuestion]) -> None:
    """Refuse a user template file (``engine.user_template``; None: the packaged one, nothing to
    check) that cannot show ``questions``, when a run starts rather than at the first episode
    that needs the missing field."""
    if path is not None:
        load_prompts(user_template_file=path).check_questions(questions)


def _read(name: str) -> str:
    return resources.files("paravt.agent").joinpath("prompts", name).read_text(encoding="utf-8")


def _fill(text: str, **values) -> str:
    return Template(text).safe_substitute(**{k: str(v) for k, v in values.items()})


def tool_schema() -> dict:
    """The crop_video schema shown to the model (its one home is ``paravt.tools.schema``)."""
    return TOOL_SCHEMA


#: How our wording points at a schema that the template (or the Hermes block) writes itself.
NATIVE_TOOL_POINTER = " Its definition is listed under # Tools below."


def hermes_tools_block(tools: list[dict]) -> str:
    """A Hermes-style tools section for templates that ignore ``tools=``.

    The layout (``# Tools``, one JSON schema a line inside ``<tools></tools>``, the ``<tool_call>``
    instruction) is the one Qwen templates render for ``tools=``: it is a format the model
    recognises, so it is kept as the model saw it in training rather than reworded.
    """
    schemas = "\n".join(json.dumps(t) for t in tools)
    return (
        "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n"
        f"<tools>\n{schemas}\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )


def format_timestamp(t: float) -> str:
    """The per-frame time label that precedes each overview frame (Qwen3-VL's own style)."""
    return f"<{t:.1f} seconds>"


def format_options(options: list[str] | None, question: str = "a question") -> str:
    """``A. first\\nB. second\\n`` — options already lettered (``"A. x"``, ``"(A) x"``) stay as
    given.

    Letters are ``paravt.schema.LETTERS`` (A–J), the ones extraction reads; more options
    than that raise ``TooManyOptionsError`` naming ``question``."""
    if not options:
        return ""
    require_letterable(options, question)
    lines = []
    for i, opt in enumerate(options):
        text = str(opt).strip()
        letter = LETTERS[i]
        head = text[:3].lstrip("(")
        if len(head) >= 2 and head[0] == letter and head[1] in ".):":
            lines.append(text)
        else:
            lines.append(f"{letter}. {text}")
    return "\n".join(lines) + "\n"


@dataclass
class Prompts:
    """All prompt texts of one run. Build with ``load_prompts``."""

    system_by_mode: dict[str, str]
    user: str
    instructions: dict[str, str]
    forced: str
    forced_mcq: str
    subagent: str
    system_override: str | None = None
    #: ``engine.user_template``'s text: replaces ``user`` and can use every field of
    #: ``USER_TEMPLATE_FIELDS``
    user_override: str | None = None

    def system(
        self, mode: str, max_turns: int, max_parallel: int, schema_in_text: bool = True
    ) -> str:
        """The system prompt; ``schema_in_text=False`` points at a tools section instead."""
        if self.system_override is not None:
            return self.system_override
        if mode not in self.system_by_mode:
            raise UserError(
                f"no system prompt for mode {mode!r}; choose parallel, sequential or direct"
            )
        schema = json.dumps(tool_schema())
        return _fill(
            self.system_by_mode[mode],
            tool_schema=schema,
            tool_definition=(
                f" Its definition:\n{schema}" if schema_in_text else NATIVE_TOOL_POINTER
            ),
            max_turns=max_turns,
            max_parallel=max_parallel,
        )

    def system_and_tools(
        self,
        mode: str,
        max_turns: int,
        max_parallel: int,
        tool_prompt: str,
        template_renders_tools: bool,
    ) -> tuple[str, list[dict] | None]:
        """``(system text, tools for the template or None)`` under ``tool_prompt``.

        ``direct`` has no tool. ``native`` with a template that renders ``tools=``: the schema
        goes to the template; without one: a Hermes block closes the system text. A system prompt
        file (``system_override``) is used verbatim under either setting: it says how the tool is
        presented, so nothing is added to it (or the schema would reach the model twice).
        """
        native = tool_prompt == "native" and mode != "direct" and self.system_override is None
        text = self.system(mode, max_turns, max_parallel, schema_in_text=not native)
        if not native:
            return text, None
        if template_renders_tools:
            return text, [tool_schema()]
        return text + "\n\n" + hermes_tools_block([tool_schema()]), None

    def instruction(self, question_type: str) -> str:
        return self.instructions.get(question_type, self.instructions["oe"])

    def check_questions(self, questions: Iterable[ShownQuestion]) -> None:
        """Refuse, before any episode runs, a user template that lacks a field one of
        ``questions`` needs. The packaged template has them all."""
        if self.user_override is None:
            return
        fields = template_fields(self.user_override)
        for q in questions:
            if q.options and "options" not in fields:
                raise UserTemplateError(
                    f"the user template has no ${{options}} field, and question {q.id!r} has "
                    "options the model would never see; add ${options} to the template"
                )

    def question_text(
        self,
        question: str,
        options: list[str] | None,
        question_type: str,
        video: str | Path | None = None,
    ) -> str:
        """The text that follows the overview frames: question, lettered options, instruction
        (the packaged layout, or ``user_override`` with its named fields)."""
        values = {
            "question": question.strip(),
            "options": format_options(options, f"question {question.strip()[:80]!r}"),
            "instruction": self.instruction(question_type),
        }
        if self.user_override is None:
            return _fill(self.user, **values)
        video_path = "" if video is None else str(video)
        values.update(
            video_path=video_path,
            video_name=Path(video_path).name if video_path else "",
            question_type=question_type,
        )
        return Template(self.user_override).substitute(**values)

    def user_content(
        self,
        times: list[float],
        question: str,
        options: list[str] | None,
        question_type: str,
        timestamps: bool = True,
        video: str | Path | None = None,
    ) -> list[dict]:
        """Chat content parts of the first user turn: ``[<t>] image`` per frame, then the text."""
        return _frames_then_text(
            times, timestamps, self.question_text(question, options, question_type, video)
        )

    def forced_answer(self, question_type: str) -> str:
        if question_type == "mcq":
            return self.forced_mcq
        return _fill(self.forced, instruction=self.instruction(question_type))

    def subagent_content(
        self, times: list[float], start: float, end: float, question: str, timestamps: bool = True
    ) -> list[dict]:
        """Content of the sub-agent's user turn: the window's frames, then what to summarise."""
        text = _fill(
            self.subagent, start=f"{start:.1f}", end=f"{end:.1f}", question=question.strip()
        )
        return _frames_then_text(times, timestamps, text)


def _frames_then_text(times: list[float], timestamps: bool, text: str) -> list[dict]:
    """``[<t seconds>] image`` per frame, then ``text`` on its own line (docs/PROTOCOL.md §2)."""
    parts: list[dict] = []
    for t in times:
        if timestamps:
            parts.append({"type": "text", "text": format_timestamp(t)})
        parts.append({"type": "image"})
    parts.append({"type": "text", "text": ("\n" if times else "") + text})
    return parts


def load_prompts(
    system_prompt_file: str | Path | None = None, user_template_file: str | Path | None = None
) -> Prompts:
    """Read the packaged prompts; ``system_prompt_file`` replaces the system prompt verbatim,
    ``user_template_file`` the first user turn's text (see the module docstring)."""
    override = None
    if system_prompt_file is not None:
        override = _read_file(
            Path(system_prompt_file), "system prompt", "--system-prompt", UserError
        )
    return Prompts(
        system_by_mode={
            m: _read(f"system_{m}.txt").strip() for m in ("parallel", "sequential", "direct")
        },
        user=_read("user.txt").strip(),
        instructions={q: _read(f"instruction_{q}.txt").strip() for q in QUESTION_TYPES},
        forced=_read("forced_answer.txt").strip(),
        forced_mcq=_read("forced_answer_mcq.txt").strip(),
        subagent=_read("subagent.txt").strip(),
        system_override=override,
        user_override=(
            None if user_template_file is None else load_user_template(user_template_file)
        ),
    )
