"""What goes into the episode engine, what crosses the backend boundary, and what comes out.

One module holds these plain dataclasses so that the engine, the backends, the scripted test
backend, evaluation and the trainer all speak the same vocabulary:

- ``EpisodeInput``: one question about one video (what callers hand the engine).
- ``GenRequest`` / ``Generation``: one generation asked of a backend and its answer. A request
  carries the conversation twice — in message space as chat ``messages`` + raw ``images`` (for
  HTTP backends that apply the template server-side) and, when the backend works in token space,
  as ``tokens``, a ``TokenPrompt``: ids + ``pixel_values``/``image_grid_thw`` (token-in/token-out,
  for the local model and the policy).
- ``EpisodeRecord``: everything that happened in one episode — turns, calls, results, errors,
  timings, token counts, final answer (the trace: what eval, the viewer and infer read) — and, in
  its ``stream`` field, a ``TokenStream``: the token ids, loss mask, logprobs and images the
  trainer and SFT read for their loss forward.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from paravt.errors import UserError
from paravt.schema.questions import QUESTION_TYPES, QuestionType, require_letterable
from paravt.schema.tools import ToolCounts  # the one record of an episode's tool calls

__all__ = [
    "CallRecord",
    "EpisodeErrorKind",
    "EpisodeInput",
    "EpisodeRecord",
    "GenRequest",
    "Generation",
    "ImageItem",
    "TokenPrompt",
    "TokenStream",
    "TurnRecord",
    "join_rows",
    "view_dict",
]


@dataclass
class EpisodeInput:
    """One question about one video.

    ``frames_k`` overrides ``EngineConfig.frames`` for this episode (nFrames Gating sets it per
    prompt). ``answer`` is the gold answer, carried through to the record untouched (scoring is not
    the engine's job). ``meta`` is copied to the record as-is.
    """

    id: str
    video: str
    question: str
    options: list[str] | None = None
    question_type: QuestionType = "mcq"
    frames_k: int | None = None
    answer: Any = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        # a misspelt type would silently get the open-ended prompt and forced-answer budget
        if self.question_type not in QUESTION_TYPES:
            raise UserError(
                f"episode {self.id!r}: question_type {self.question_type!r} is not one of "
                f"{', '.join(QUESTION_TYPES)}"
            )
        require_letterable(self.options, f"episode {self.id!r}")
        k = self.frames_k
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise UserError(f"episode {self.id!r}: frames_k must be a positive integer, got {k!r}")


#: why an errored episode failed: an unreadable or missing video, a failed generation, or other
EpisodeErrorKind = Literal["video", "backend", "engine"]


@dataclass
class ImageItem:
    """One image of an episode's context, in order (overview frames, then tool frames).

    ``data`` is the decoded uint8 ``[3, H, W]`` frame; ``min_pixels``/``max_pixels`` are the pixel
    budget it is resized under; ``grid_thw`` is the vision grid the model sees (image layout, so
    ``t == 1``), which fixes how many image-pad tokens stand for it in the token stream.
    """

    data: Any
    time: float
    source: Literal["overview", "tool"]
    min_pixels: int
    max_pixels: int
    grid_thw: tuple[int, int, int] | None = None
    #: preprocessed rows of this image (filled once, shared by every episode holding the item)
    pixels: Any = field(default=None, repr=False, compare=False)

    @property
    def grid(self) -> tuple[int, int, int]:
        """``grid_thw``, which the episode's context sets when the item joins it (its budget
        resolved by the codec); read before that, it is the engine's bug, said as such."""
        if self.grid_thw is None:
            raise RuntimeError(f"image at {self.time:.2f} s has no vision grid yet")
        return self.grid_thw


def join_rows(items: list[ImageItem]) -> Any:
    """The preprocessed rows of ``items`` in order, as one tensor, copied only when necessary.

    Why: at the evaluation budget (K = 64, 720p) an overview is ~0.9 GB of float32 rows. Those
    rows come out of one ``preprocess`` call, so every item's ``pixels`` is a slice of one tensor;
    when ``items`` are such slices, back to back, the result is a view of that tensor and every
    episode of the video shares it. Anything else (tool frames after the overview) is joined with
    ``torch.cat``, a copy.
    """
    import torch

    parts = [it.pixels for it in items]
    first = parts[0]
    storage, width = first.untyped_storage().data_ptr(), first.shape[-1]
    at = first.storage_offset()
    for p in parts:
        same = p.untyped_storage().data_ptr() == storage and p.storage_offset() == at
        if not (same and p.is_contiguous() and p.dim() == 2 and p.shape[-1] == width):
            break
        at += p.numel()
    else:  # back to back in one storage: the same memory seen as one tensor
        rows = (at - first.storage_offset()) // width
        return first.as_strided((rows, width), (width, 1), first.storage_offset())
    return torch.cat(parts)


@dataclass
class TokenPrompt:
    """A request's context in token space: what a token-in/token-out backend feeds its model.

    ``ids`` is the whole context so far (image pads expanded); ``pixel_values``/``image_grid_thw``
    cover every image of that context, in order. ``pixel_values`` is None when the backend reads
    each ``ImageItem.pixels`` itself (``reads_image_pixels``: no joined copy is made for it).
    """

    ids: list[int]
    pixel_values: Any = None
    image_grid_thw: Any = None


@dataclass
class GenRequest:
    """One generation asked of a backend.

    ``role`` is ``main`` for the main agent (``forced`` marks the final forced-answer turn) and
    ``subagent`` for a sub-agent summarising one window. ``messages`` uses the Hugging Face chat
    format with ``{"type": "image"}`` parts standing for ``images`` in order; tool results are
    ``role: "tool"`` messages: the message-space form of the context. ``tokens`` is its
    token-space form (``TokenPrompt``), set only when the backend has a ``codec``; None for a
    backend that reads messages only.
    """

    episode_id: str
    turn: int
    role: Literal["main", "subagent"]
    messages: list[dict]
    images: list[ImageItem]
    max_new_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    forced: bool = False
    tokens: TokenPrompt | None = None
    prefill: str = ""
    key: str = ""
    preprocess_s: float = 0.0  # time the engine spent preparing the pixel rows for this request
    #: tool schemas the chat template renders itself (``engine.tool_prompt=native``), else None
    tools: list[dict] | None = None
    #: the episode asks again after this turn, with this turn's output and a tool turn appended
    #: to ``tokens.ids``: a backend that keeps episode state (``keep_episode_state``) keeps it
    continues: bool = False
    #: what names this episode's kept state: unique among the episodes of one engine run (GRPO's
    #: generations of one prompt share ``episode_id``)
    state_key: str = ""

    def require_tokens(self) -> TokenPrompt:
        """``tokens``, which a token-space backend needs: the engine sets them whenever the
        backend has a codec, so a request without them is the engine's bug, said as such."""
        if self.tokens is None:
            raise RuntimeError(
                f"request {self.key or self.episode_id!r} has no token-space prompt (tokens)"
            )
        return self.tokens


@dataclass
class Generation:
    """A backend's answer to one ``GenRequest``.

    ``error`` set means the generation failed (server down, bad response): the engine records it as
    an episode error and never scores ``text`` as an answer. ``token_ids`` (generated ids only, the
    stop token included when the model emitted it) and ``logprobs`` (one per generated id) are
    given by token-space backends; HTTP backends leave them ``None``.
    """

    text: str = ""
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    error: str | None = None
    finish_reason: Literal["stop", "length", "error"] = "stop"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    #: prompt tokens served from a kept cache instead of prefilled (hf: the episode's kept state;
    #: an OpenAI-compatible server: its prefix cache, where it reports it)
    cached_tokens: int | None = None
    preprocess_s: float = 0.0
    generate_s: float = 0.0
    #: the weights that sampled it: the trainer's policy version (optimizer steps) when the
    #: backend is a training sampler that knows it, else ``None`` (``paravt.rollout.gate``)
    policy_version: int | None = None


@dataclass
class CallRecord:
    """One ``crop_video`` call (or one malformed call block) of one turn.

    ``status``: ``ok`` (executed, evidence returned), ``error`` (a tool error went back to the
    model: malformed block, bad window, over the cap, ...), ``ignored`` (a call in a turn that gets
    no tool response, e.g. the forced-answer turn or ``direct`` mode).
    """

    turn: int
    index: int
    name: str | None
    arguments: dict | None
    status: Literal["ok", "error", "ignored"]
    error: str | None = None
    error_kind: str | None = None
    start: float | None = None
    end: float | None = None
    n_frames: int = 0
    times: list[float] = field(default_factory=list)
    response: str = ""
    summary: str | None = None
    raw: str = ""
    warnings: list[str] = field(default_factory=list)


@dataclass
class TurnRecord:
    """One generation of the main agent."""

    index: int
    text: str
    forced: bool = False
    finish_reason: str = "stop"
    prompt_tokens: int = 0
    cached_tokens: int = 0  # of prompt_tokens, those not prefilled again (``Generation``)
    generated_tokens: int = 0
    tool_tokens: int = 0
    n_calls: int = 0
    answer: str | None = None
    has_answer_tag: bool = False
    generate_s: float = 0.0
    preprocess_s: float = 0.0
    decode_s: float = 0.0
    #: the policy version that sampled this turn (``Generation.policy_version``): with bounded
    #: staleness the turns of one episode may come from two versions (a partial rollout)
    policy_version: int | None = None


@dataclass
class Timings:
    """Seconds spent per stage, summed over the episode (batched work is split evenly)."""

    decode_s: float = 0.0
    preprocess_s: float = 0.0
    generate_s: float = 0.0
    total_s: float = 0.0


@dataclass
class TokenCounts:
    prompt: int = 0
    generated: int = 0
    tool: int = 0
    image: int = 0
    total: int = 0


@dataclass
class TokenStream:
    """What a loss forward reads of one episode: its token stream and images.

    The token fields are filled when the backend works in token space (it has a ``codec``):
    ``token_ids`` is the whole stream (prompt first), ``loss_mask`` is 1 exactly on generated
    tokens, ``logprobs`` is aligned with ``token_ids`` (0.0 where not generated or not returned),
    ``prompt_len`` counts the tokens before the first generated one (think prefix included).
    ``images`` are every image of the stream in order (kept with ``EngineConfig.keep_images``,
    for any backend), with ``pixel_values``/``image_grid_thw`` their preprocessed form (one grid
    row per image; image-pad tokens in the stream == sum of grid products / merge²).
    """

    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    prompt_len: int = 0
    images: list[ImageItem] = field(default_factory=list)
    image_grid_thw: Any = None
    _pixel_values: Any = field(default=None, repr=False)

    @property
    def pixel_values(self) -> Any:
        """Every image's preprocessed rows in stream order (None without them), joined when
        read: a view of the shared overview rows when the episode holds only those, else a
        fresh copy (``join_rows``). Joining on read keeps a batch of finished records from
        holding one copy of the same overview each."""
        if self._pixel_values is not None:
            return self._pixel_values
        if not self.images or any(it.pixels is None for it in self.images):
            return None
        return join_rows(self.images)

    @pixel_values.setter
    def pixel_values(self, value: Any) -> None:
        self._pixel_values = value

    def pixel_parts(self) -> list:
        """The preprocessed rows as pieces in stream order, not joined (``[]`` without them):
        the rows set on the stream, else each image's own. A batch of records then joins its
        rows once (the trainer's collation) instead of once per record and again per batch."""
        if self._pixel_values is not None:
            return [self._pixel_values]
        if not self.images or any(it.pixels is None for it in self.images):
            return []
        return [it.pixels for it in self.images]

    def drop_pixels(self) -> None:
        """Let go of the preprocessed rows (``pixel_values``); the frames and the grid stay."""
        self._pixel_values = None
        for it in self.images:
            it.pixels = None


@dataclass
class EpisodeRecord:
    """Everything one episode produced.

    ``status`` is ``ok`` or ``error`` (then ``error`` says why: unreadable video, failed
    generation, ...); an errored episode has ``prediction is None`` and still counts in a
    benchmark's denominator. ``prediction`` is the final answer text
    (extracted per docs/PROTOCOL.md §4).

    The record's own fields are the trace (what eval, the viewer and infer read); ``stream`` is
    the token stream and images a loss forward reads (``TokenStream``: the trainer, SFT).
    """

    id: str
    video: str
    question: str
    question_type: str
    options: list[str] | None
    gold: Any
    mode: str
    evidence: str
    status: Literal["ok", "error"] = "ok"
    error: str | None = None
    #: why an errored episode failed, for summaries that must not parse messages:
    #: ``video`` (unreadable/missing video), ``backend`` (generation failed), ``engine`` (other)
    error_kind: EpisodeErrorKind | None = None
    prediction: str | None = None
    answer_source: str | None = None
    forced: bool = False
    frames_k: int = 0
    overview_times: list[float] = field(default_factory=list)
    video_meta: dict = field(default_factory=dict)
    prefix: str = ""
    turns: list[TurnRecord] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    tool_counts: ToolCounts = field(default_factory=ToolCounts)
    timings: Timings = field(default_factory=Timings)
    tokens: TokenCounts = field(default_factory=TokenCounts)
    warnings: list[str] = field(default_factory=list)
    messages: list[dict] = field(default_factory=list)
    #: tool schemas rendered by the template with ``messages`` (None: the schema is in the text)
    tools: list[dict] | None = None
    meta: dict = field(default_factory=dict)
    #: the token stream, loss mask, logprobs and images (what a loss forward reads)
    stream: TokenStream = field(default_factory=TokenStream)
    subagents: list[EpisodeRecord] = field(default_factory=list)

    def drop_pixels(self) -> None:
        """Let go of the preprocessed rows (``pixel_values``); the frames and the grid stay.

        Why: a finished record of a K = 64 evaluation episode would otherwise hold ~0.9 GB of
        float32 rows that only a loss forward reads, for as long as the caller keeps the record
        (``docs/INFER.md``, memory). The images' rows are shared with the other records of the
        same run, so this is done once the run is over.
        """
        self.stream.drop_pixels()
        for sub in self.subagents:
            sub.drop_pixels()

    def all_warnings(self) -> list[str]:
        """Every warning the episode carries, each once: the record's own (the overview's:
        frames decoded after damage in the file, frames that could not be decoded, a truncated
        file), then each call's as ``call T.I: ...`` (turn, index). Eval's results and summary
        and infer's view report these."""
        out = list(dict.fromkeys(str(w) for w in self.warnings))
        for call in self.calls:
            out += [f"call {call.turn}.{call.index}: {w}" for w in dict.fromkeys(call.warnings)]
        return out

    @property
    def completion_text(self) -> str:
        """Every main-agent turn's text joined, as the format reward reads it."""
        return "".join(t.text for t in self.turns)

    @property
    def final_text(self) -> str | None:
        return self.turns[-1].text if self.turns else None

    def to_dict(self, tokens: bool = False) -> dict:
        """JSON-able view (no tensors). ``tokens=True`` adds the token stream, mask and logprobs.

        The stream's fields stay at the top level, as they were before the record held them in
        ``stream`` (``prompt_len``, ``n_images``; ``token_ids``/``loss_mask``/``logprobs`` with
        ``tokens=True``): episode files written before and after read the same."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "stream":
                out["prompt_len"] = self.stream.prompt_len
            elif f.name == "subagents":
                out[f.name] = [s.to_dict(tokens=tokens) for s in value]
            elif dataclasses.is_dataclass(value) and not isinstance(value, type):
                out[f.name] = dataclasses.asdict(value)
            elif isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
                out[f.name] = [dataclasses.asdict(v) for v in value]
            else:
                out[f.name] = value
        out["n_images"] = len(self.stream.images)
        if tokens:
            out["token_ids"] = list(self.stream.token_ids)
            out["loss_mask"] = list(self.stream.loss_mask)
            out["logprobs"] = list(self.stream.logprobs)
        return out


def view_dict(record: EpisodeRecord) -> dict:
    """What a person browsing runs needs of an episode (``paravt view``): ``to_dict`` without
    the chat ``messages`` and tool schemas, which repeat the prompts in every episode."""
    out = record.to_dict()
    out.pop("messages", None)
    out.pop("tools", None)
    for sub in out.get("subagents", []):
        sub.pop("messages", None)
        sub.pop("tools", None)
    return out
