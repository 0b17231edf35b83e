"""One generated turn's text → tool calls, per-block errors and the answer (docs/PROTOCOL.md §4).

Why per block: a turn that asks for five windows and botches one of them should still get four
windows plus one tool error that tells the model what was wrong, never nothing at all. So every
``<tool_call>…</tool_call>`` (or ``<tool_code>…</tool_code>``) block is parsed on its own and each
problem is reported as a :class:`CallError` in the place of the call it spoils.

Why here, at the bottom of the package (docs/INTERFACES.md §1): the episode engine, the rewards
and evaluation all read turns with this one grammar, and the rewards sit below the agent.

Rules (the choices the protocol leaves open are marked *choice*):

* Block forms: JSON ``{"name": ..., "arguments": {...}}`` (``arguments`` may be a JSON string; the
  OpenAI ``{"type": "function", "function": {...}}`` wrapper and a ``parameters`` key are accepted;
  a single-quoted Python dict literal is accepted through :func:`ast.literal_eval`), and the
  Python-call form ``crop_video(start_time=…, end_time=…)`` read with :mod:`ast` plus
  :func:`ast.literal_eval` on each keyword value — nothing is ever evaluated. Markdown code fences
  around the body are ignored.
* *choice*: several objects in one block (``{...}{...}``, ``{...}\\n{...}``, a JSON list, or
  several Python calls on separate lines) are several calls, each with its own ``index``.
* Unterminated block: the block runs to the next block opener, ``<answer>``/``<think>``/``</think>``
  tag, or the end of the text. *choice*: if its body still parses completely it is accepted (a
  generation stopped on the ``</tool_call>`` stop string looks exactly like this); otherwise it is
  a ``unterminated`` error.
* Calls inside ``<think>…</think>`` are not executed; they are listed in ``ignored`` (kind
  ``inside_think``), *not* in ``errors``, so a turn whose only calls sit in its reasoning is not a
  tool turn. A ``</think>`` with no opener (the prompt pre-filled ``<think>``) closes a region that
  starts at the beginning of the text. *choice*: a ``<think>`` that is never closed ends at the
  first tool block or ``<answer>`` after it — the model evidently moved on.
* ``index`` numbers calls and errors together in text order, so sorting both by ``index`` gives
  the order in which tool responses should be returned.
* Positional arguments of the Python-call form take the tool's parameter names in the order of
  its schema (``paravt.tools.schema``), so ``crop_video("v", 10, 20)`` is a call; more
  positionals than parameters is an error that names the tool. ``print(crop_video(…))`` calls
  crop_video. *choice*: a quote left alone before a line's closing parenthesis
  (``end_time=20.0')``) is dropped when the line does not parse with it. ``ast``'s
  ``SyntaxWarning`` messages about such text are silenced: they would reach the user's terminal.
* Answer extraction (:func:`extract_answer`): the first ``<answer>…</answer>`` outside
  ``<think>`` (an unclosed ``<answer>`` runs to the end of the text); otherwise all of the text
  after the last ``</think>`` (the whole text if there is none) with tool blocks and tags removed
  (empty → no answer). Never only its last line: ``D. 1633`` followed by an explanation is read
  by the letter/span readers of ``paravt.rewards.answers``, which look at all of it. Chat special
  tokens such as ``<|im_end|>`` are stripped from the answer.

:func:`parse_turn` never raises, whatever the string.
"""

from __future__ import annotations

import ast
import json
import logging
import re
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from paravt.tools.schema import TOOL_NAME, TOOL_PARAMETERS

__all__ = [
    "DEFAULT_TOOLS",
    "ERROR_KINDS",
    "CallError",
    "ParsedTurn",
    "ToolCall",
    "answer_tail",
    "extract_answer",
    "parse_turn",
]

_log = logging.getLogger(__name__)

#: Tool names the parser accepts unless told otherwise.
DEFAULT_TOOLS: frozenset[str] = frozenset({TOOL_NAME})

UNTERMINATED = "unterminated"
INVALID_JSON = "invalid_json"
INVALID_SYNTAX = "invalid_syntax"
UNKNOWN_TOOL = "unknown_tool"
BAD_ARGUMENTS = "bad_arguments"
INSIDE_THINK = "inside_think"
#: A bug of the parser itself (an unexpected exception, logged with its traceback): not the
#: model's fault, so never reported as ``invalid_json``.
PARSER_ERROR = "parser_error"
#: Every ``CallError.kind`` the parser can produce.
ERROR_KINDS: tuple[str, ...] = (
    UNTERMINATED,
    INVALID_JSON,
    INVALID_SYNTAX,
    UNKNOWN_TOOL,
    BAD_ARGUMENTS,
    INSIDE_THINK,
    PARSER_ERROR,
)


@dataclass(frozen=True)
class ToolCall:
    """One well-formed call. ``raw`` is the text of the block (or of this call within it)."""

    name: str
    arguments: dict
    raw: str
    index: int
    terminated: bool = True  # False: accepted from a block that lacked its closing tag
    span: tuple[int, int] = (0, 0)  # character span of the whole block in the turn text


@dataclass(frozen=True)
class CallError:
    """One block (or one object in a block) that could not become a call; ``message`` is written
    for the model and says how to fix it."""

    kind: str
    message: str
    raw: str
    index: int
    span: tuple[int, int] = (0, 0)


@dataclass
class ParsedTurn:
    """Everything the engine, the rewards and the evaluation need from one turn's text."""

    calls: list[ToolCall] = field(default_factory=list)
    errors: list[CallError] = field(default_factory=list)
    ignored: list[CallError] = field(default_factory=list)  # calls written inside <think>
    answer: str | None = None  # None: nothing extractable; "": an empty <answer></answer>
    has_answer_tag: bool = False  # an <answer> opener outside <think>
    answer_closed: bool = False  # ... and its </answer>
    think: str | None = None  # text of the first <think> region, tags excluded

    @property
    def is_tool_turn(self) -> bool:
        """Any call or call error outside ``<think>``: this turn's ``<answer>`` is not final."""
        return bool(self.calls or self.errors)


_TAG_RE = re.compile(r"<(/?)(think|answer|tool_call|tool_code)>")
_OPENERS = ("tool_call", "tool_code")
_SPECIAL_TOKEN_RE = re.compile(r"<\|[^|<>\s]{1,40}\|>")
_FENCE_RE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?|\n?\s*```\s*$")
_PY_CALL_START = re.compile(r"[A-Za-z_][\w.]*\s*\(")
_STRAY_QUOTE = re.compile(r"^(.*?[^\s'\"])\s*(['\"])(\s*\)[\s)]*;?\s*)$")


@dataclass(frozen=True)
class _Tag:
    start: int
    end: int
    name: str
    closing: bool


@dataclass(frozen=True)
class _Block:
    start: int  # position of the opener
    body_start: int
    body_end: int
    end: int  # end of the closer (or of the body when unterminated)
    terminated: bool


def _tags(text: str) -> list[_Tag]:
    return [_Tag(m.start(), m.end(), m.group(2), m.group(1) == "/") for m in _TAG_RE.finditer(text)]


def _think_regions(tags: list[_Tag], text_len: int) -> list[tuple[int, int]]:
    """Character spans of the reasoning: ``<think>…</think>`` pairs, a leading region closed by a
    stray ``</think>`` (pre-filled opener), and an unclosed ``<think>`` up to the next tool block
    or ``<answer>``."""
    regions: list[tuple[int, int]] = []
    open_at: int | None = None
    last_end = 0
    for t in tags:
        if t.name != "think":
            continue
        if not t.closing:
            if open_at is None:
                open_at = t.start
        elif open_at is not None:
            regions.append((open_at, t.end))
            open_at, last_end = None, t.end
        else:
            regions.append((last_end, t.end))
            last_end = t.end
    if open_at is not None:
        stop = text_len
        for t in tags:
            moved_on = t.name in ("tool_call", "tool_code", "answer")
            if t.start > open_at and not t.closing and moved_on:
                stop = t.start
                break
        regions.append((open_at, stop))
    return regions


def _inside(pos: int, regions: list[tuple[int, int]]) -> bool:
    return any(s <= pos < e for s, e in regions)


def _blocks(tags: list[_Tag], text_len: int) -> list[_Block]:
    """Tool blocks in text order; an opener inside an earlier block's body is part of that body
    only if a closer follows it — otherwise it starts a new block."""
    blocks: list[_Block] = []
    i = 0
    n = len(tags)
    while i < n:
        t = tags[i]
        if t.closing or t.name not in _OPENERS:
            i += 1
            continue
        j = i + 1
        block = None
        while j < n:
            u = tags[j]
            if u.closing and u.name in _OPENERS:
                block = _Block(t.start, t.end, u.start, u.end, True)
                j += 1
                break
            if (not u.closing and u.name in _OPENERS) or u.name in ("answer", "think"):
                block = _Block(t.start, t.end, u.start, u.start, False)
                break
            j += 1
        if block is None:
            block = _Block(t.start, t.end, text_len, text_len, False)
        blocks.append(block)
        i = j
    return blocks


def _strip_fences(body: str) -> str:
    body = body.strip()
    if body.startswith("```"):
        body = _FENCE_RE.sub("", body).strip()
    return body


def _json_values(body: str) -> tuple[list[Any], str | None]:
    """Decode one or more JSON values written back to back. Returns the values and, if something
    after them did not decode, an error message about that remainder."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    pos, n = 0, len(body)
    while True:
        while pos < n and body[pos] in " \t\r\n,;":
            pos += 1
        if pos >= n:
            return values, None
        try:
            value, pos = decoder.raw_decode(body, pos)
        except (ValueError, RecursionError) as e:
            if not values:
                literal = _literal(body)
                if literal is not _MISSING:
                    return [literal], None
            msg = e.msg if isinstance(e, json.JSONDecodeError) else type(e).__name__
            where = f" at character {pos}" if values else ""
            return values, f"{msg}{where}"
        if isinstance(value, list):
            values.extend(value)
        else:
            values.append(value)


_MISSING = object()


class _BlockError(NamedTuple):
    """An error found among a block's values (``_python_calls``); a distinct type, because a
    Python literal in a block (``'',`` reads as a tuple) must never be mistaken for one."""

    kind: str
    message: str


def _literal(text: str) -> Any:
    """A Python literal (e.g. a single-quoted dict), or ``_MISSING``; never evaluates code."""
    if len(text) > 100_000:
        return _MISSING
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _MISSING


def _without_stray_quotes(body: str) -> str:
    """Drop a quote that stands alone before a line's closing parenthesis
    (``end_time=20.0')``): a line with an odd number of that quote cannot be valid Python."""
    lines = []
    for line in body.splitlines():
        m = _STRAY_QUOTE.match(line)
        if m and line.count(m.group(2)) % 2 == 1:
            line = m.group(1) + m.group(3)
        lines.append(line)
    return "\n".join(lines)


def _parse_python(body: str) -> ast.Module:
    """The statements of a Python-call body; a stray trailing quote is tolerated."""
    try:
        return ast.parse(body, mode="exec")
    except SyntaxError:
        repaired = _without_stray_quotes(body)
        if repaired == body:
            raise
        return ast.parse(repaired, mode="exec")


def _called(node: ast.Call) -> ast.Call:
    """The call inside ``print(...)`` wrappers (``print(crop_video(...))`` calls crop_video)."""
    while (
        isinstance(node.func, ast.Name)
        and node.func.id == "print"
        and len(node.args) == 1
        and not node.keywords
        and isinstance(node.args[0], ast.Call)
    ):
        node = node.args[0]
    return node


def _call_arguments(
    name: str, node: ast.Call, tools: frozenset[str]
) -> tuple[dict[str, Any] | None, str | None]:
    """Keyword and positional arguments of one call as literals; positionals take the tool's
    parameter names in schema order. → ``(arguments, None)`` or ``(None, problem)``; an unknown
    tool gets empty arguments, so that the caller reports the unknown name."""
    if name not in tools:
        return {}, None
    order = TOOL_PARAMETERS.get(name)
    signature = f"{name}({', '.join(order)})" if order else f"{name}(start_time=10, end_time=20)"
    if node.args and order is None:
        return None, f"{name}: positional arguments are not accepted; name every argument"
    if order is not None and len(node.args) > len(order):
        return None, (
            f"{name}: takes at most {len(order)} positional arguments ({', '.join(order)}), "
            f"got {len(node.args)}; call {signature}"
        )
    # the positional arguments given take the first names of the signature; the rest go unnamed
    pairs = list(zip(order or (), node.args, strict=False)) + [
        (kw.arg, kw.value) for kw in node.keywords
    ]
    arguments: dict[str, Any] = {}
    for key, value in pairs:
        if key is None:
            return None, f"{name}: **kwargs is not accepted; name every argument"
        if key in arguments:
            return None, f"{name}: argument '{key}' is given twice; call {signature}"
        if isinstance(value, ast.Starred):
            return None, f"{name}: *args is not accepted; call {signature}"
        try:
            arguments[key] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return None, (
                f"{name}: argument '{key}' must be a plain number or string, not an expression"
            )
    return arguments, None


def _python_calls(body: str, tools: frozenset[str]) -> tuple[list[Any], str | None, str]:
    """Parse ``name(…)`` statements (keyword or positional literals, optionally wrapped in
    ``print(…)``) into ``{"name", "arguments"}`` dicts.

    Returns (values, error message, error kind); a value is either such a dict or a
    ``(kind, message)`` tuple for one statement that was a call but had bad arguments."""
    try:
        tree = _parse_python(body)
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        detail = getattr(e, "msg", None) or type(e).__name__
        return [], f"not a valid call: {detail}", INVALID_SYNTAX
    values: list[Any] = []
    for stmt in tree.body:
        node = stmt.value if isinstance(stmt, ast.Expr) else None
        if not isinstance(node, ast.Call):
            return (
                values,
                "expected only calls such as crop_video(start_time=10, end_time=20)",
                (INVALID_SYNTAX),
            )
        node = _called(node)
        func = node.func
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute):
            name = func.attr
        else:
            values.append(_BlockError(INVALID_SYNTAX, "the called object must be a tool name"))
            continue
        arguments, problem = _call_arguments(name, node, tools)
        if problem:
            values.append(_BlockError(BAD_ARGUMENTS, problem))
        else:
            values.append({"name": name, "arguments": arguments})
    return values, None, INVALID_SYNTAX


def _decode_arguments(value: Any) -> tuple[dict | None, str | None]:
    if isinstance(value, dict):
        return value, None
    if isinstance(value, str):
        text = _strip_fences(value)
        if not text:
            return {}, None
        try:
            decoded = json.loads(text)
        except (ValueError, RecursionError):
            decoded = _literal(text)
            if decoded is _MISSING:
                return None, "'arguments' is a string that is not a JSON object"
        if isinstance(decoded, dict):
            return decoded, None
        return None, "'arguments' must be a JSON object of named arguments"
    return None, f"'arguments' must be a JSON object, got {type(value).__name__}"


def _object_to_call(obj: Any, tools: frozenset[str]) -> tuple[str, dict] | tuple[str, str, None]:
    """→ ``(name, arguments)`` or ``(kind, message, None)``."""
    example = '{"name": "crop_video", "arguments": {"start_time": 10, "end_time": 20}}'
    if not isinstance(obj, dict):
        return INVALID_JSON, f"a tool call must be a JSON object like {example}", None
    if "name" not in obj and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    name = obj.get("name")
    known = ", ".join(sorted(tools)) or "(none)"
    if not isinstance(name, str) or not name.strip():
        return UNKNOWN_TOOL, f"the call has no tool name; known tools: {known}", None
    name = name.strip()
    if name not in tools:
        return UNKNOWN_TOOL, f"unknown tool '{name[:80]}'; known tools: {known}", None
    if "arguments" in obj:
        raw_args = obj["arguments"]
    elif "parameters" in obj:
        raw_args = obj["parameters"]
    else:
        return BAD_ARGUMENTS, f"{name}: missing 'arguments'; write {example}", None
    arguments, problem = _decode_arguments(raw_args)
    if arguments is None:
        return BAD_ARGUMENTS, f"{name}: {problem}; write {example}", None
    return name, arguments


def _parse_block(body: str, tools: frozenset[str]) -> list[tuple[str, Any]]:
    """Body of one block → a list of ``("call", (name, args))`` / ``("error", (kind, msg))``."""
    text = _strip_fences(body)
    if not text:
        return [("error", (INVALID_JSON, "empty tool call block; put one JSON object inside"))]
    out: list[tuple[str, Any]] = []
    leftover: tuple[str, str] | None = None
    if text[0] in "{[" or not _PY_CALL_START.match(text):
        values, problem = _json_values(text)
        if problem:
            leftover = (INVALID_JSON, f"invalid JSON in tool call: {problem}")
    else:
        values, problem, kind = _python_calls(text, tools)
        if problem:
            leftover = (kind, problem)
    for value in values:
        if isinstance(value, _BlockError):
            out.append(("error", tuple(value)))
            continue
        result = _object_to_call(value, tools)
        if len(result) == 3:
            out.append(("error", (result[0], result[1])))
        else:
            out.append(("call", result))
    if leftover:
        out.append(("error", leftover))
    return out


def _remove_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    pieces, pos = [], 0
    for s, e in sorted(spans):
        if s > pos:
            pieces.append(text[pos:s])
        pos = max(pos, e)
    pieces.append(text[pos:])
    return "".join(pieces)


def _clean_answer(text: str) -> str:
    return _SPECIAL_TOKEN_RE.sub("", text).strip()


def _answer_tags(
    tags: list[_Tag], thinks: list[tuple[int, int]], blocks: list[_Block]
) -> tuple[_Tag, _Tag | None] | None:
    """The answer's opening tag (the first ``<answer>`` outside reasoning and tool blocks) and
    the ``</answer>`` that closes it (None when none does), or None without one."""
    block_spans = [(b.start, b.end) for b in blocks]
    for i, t in enumerate(tags):
        if t.name != "answer" or t.closing or _inside(t.start, thinks):
            continue
        if _inside(t.start, block_spans):
            continue
        closer = next((u for u in tags[i + 1 :] if u.name == "answer" and u.closing), None)
        return t, closer
    return None


def _answer(
    text: str, tags: list[_Tag], thinks: list[tuple[int, int]], blocks: list[_Block]
) -> tuple[str, bool, bool]:
    """(answer, has_answer_tag, answer_closed) per docs/PROTOCOL.md §4."""
    block_spans = [(b.start, b.end) for b in blocks]
    pair = _answer_tags(tags, thinks, blocks)
    if pair is not None:
        t, closer = pair
        if closer is not None:
            return _clean_answer(text[t.end : closer.start]), True, True
        rest = [(s - t.end, e - t.end) for s, e in block_spans if s >= t.end]
        body = _remove_spans(text[t.end :], rest)
        return _clean_answer(_TAG_RE.sub("", body)), True, False
    # after the last reasoning region: a <think> never closed is reasoning up to the next tool
    # block or the end, never an answer (else a model that names an option while thinking and
    # never answers is scored as if it had answered; RL learned exactly that, docs/ANSWERS.md)
    after = max((e for _, e in thinks), default=0)
    rest = [(max(s, after) - after, e - after) for s, e in block_spans if e > after]
    body = _remove_spans(text[after:], rest)
    return _clean_answer(_TAG_RE.sub("\n", body)), False, False


def extract_answer(text: str) -> str:
    """The answer text of a turn per docs/PROTOCOL.md §4 (``""`` when there is none)."""
    if not isinstance(text, str):
        return ""
    tags = _tags(text)
    thinks = _think_regions(tags, len(text))
    return _answer(text, tags, thinks, _blocks(tags, len(text)))[0]


def answer_tail(text: str) -> str:
    """What a turn writes after its closed answer: the text after the ``</answer>`` that closes
    the answer :func:`extract_answer` reads, without reasoning, tool blocks, tags and chat
    tokens; ``""`` when the answer is no closed tag. The answer reader reads it with the answer
    (docs/ANSWERS.md, "After the answer"): ``<answer>B</answer> Wait, it is C`` takes B back."""
    if not isinstance(text, str):
        return ""
    tags = _tags(text)
    thinks = _think_regions(tags, len(text))
    blocks = _blocks(tags, len(text))
    pair = _answer_tags(tags, thinks, blocks)
    if pair is None or pair[1] is None:
        return ""
    end = pair[1].end
    drop = [(s, e) for s, e in [*thinks, *((b.start, b.end) for b in blocks)] if e > end]
    body = _remove_spans(text[end:], [(max(s, end) - end, e - end) for s, e in drop])
    return _clean_answer(_TAG_RE.sub("\n", body))


def parse_turn(text: str, tools: Iterable[str] = DEFAULT_TOOLS) -> ParsedTurn:
    """Parse one generated turn. ``tools`` is the set of tool names that count as known."""
    if not isinstance(text, str):
        text = "" if text is None else str(text)
    known = frozenset(tools)
    tags = _tags(text)
    thinks = _think_regions(tags, len(text))
    blocks = _blocks(tags, len(text))
    turn = ParsedTurn()
    index = 0
    for b in blocks:
        raw = text[b.start : b.end]
        span = (b.start, b.end)
        if _inside(b.start, thinks):
            turn.ignored.append(
                CallError(
                    INSIDE_THINK,
                    "a tool call inside <think>…</think> is not executed; write calls after "
                    "</think>",
                    raw,
                    len(turn.ignored),
                    span,
                )
            )
            continue
        items: list[tuple[str, Any]]
        try:
            with warnings.catch_warnings():  # ast's SyntaxWarnings about model text stay here
                warnings.simplefilter("ignore", SyntaxWarning)
                items = _parse_block(text[b.body_start : b.body_end], known)
        except Exception as e:  # noqa: BLE001 - a parser bug must not cost the whole turn
            _log.error("internal error of the tool-call parser on %r", raw[:200], exc_info=True)
            message = (
                f"this tool call could not be read because of an internal error of the parser "
                f"({type(e).__name__}); write it again as one JSON object with name and arguments"
            )
            items = [("error", (PARSER_ERROR, message))]
        for what, payload in items:
            if what == "call":
                name, arguments = payload
                turn.calls.append(ToolCall(name, arguments, raw, index, b.terminated, span))
            else:
                kind, message = payload
                if not b.terminated and kind in (INVALID_JSON, INVALID_SYNTAX):
                    kind = UNTERMINATED
                    message = f"tool call block is not closed with </tool_call> ({message})"
                turn.errors.append(CallError(kind, message, raw, index, span))
            index += 1
    answer, turn.has_answer_tag, turn.answer_closed = _answer(text, tags, thinks, blocks)
    turn.answer = answer if (answer or turn.has_answer_tag) else None
    if thinks:
        s, e = thinks[0]
        turn.think = _TAG_RE.sub("", text[s:e]).strip()
    return turn
