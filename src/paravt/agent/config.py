"""The episode engine's knobs and the backends' knobs: one typed dataclass each.

``EngineConfig`` is shared by ``infer``, ``eval`` and ``train`` (each command's own config nests
it), so an episode behaves the same wherever it runs. ``BackendConfig`` picks and configures the
model behind the engine. Defaults follow docs/PROTOCOL.md §1–§3 (evaluation settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from paravt.config import check_choices
from paravt.errors import ConfigError, deprecated
from paravt.schema.questions import QuestionType
from paravt.video.config import WINDOW_MAX_PIXELS, WINDOW_MIN_PIXELS, CropConfig
from paravt.video.nvdec import check_crop_device

__all__ = [
    "BackendConfig",
    "CropSettings",
    "EngineConfig",
    "InferConfig",
    "REDACTED",
    "redacted_backend",
]

#: The released ParaVT checkpoint on the Hugging Face Hub (Qwen3-VL-8B fine-tuned with PARA-GRPO).
DEFAULT_MODEL_ID = "ParaVT/ParaVT-8B"


@dataclass
class CropSettings(CropConfig):
    """The engine's ``crop_video`` windows: the tool's ``CropConfig`` (sampling and decoding,
    docs/PROTOCOL.md §3; defined once in ``paravt.video.config``) plus the pixel budget the window frames
    are resized to for the model. The engine hands it to the tool as it is."""

    min_pixels: int = WINDOW_MIN_PIXELS
    max_pixels: int = WINDOW_MAX_PIXELS


@dataclass
class EngineConfig:
    """How episodes run.

    - ``mode``: ``parallel`` (all calls of a turn run, up to ``max_parallel``), ``sequential`` (one
      call per turn, extras answered with a tool error), ``direct`` (no tool, one answer turn).
    - ``evidence``: ``frames`` (window frames go back to the model) or ``subagent`` (the same model
      summarises each window, ≤ ``subagent_max_tokens``, then `` [truncated]``).
    - ``max_turns`` tool rounds; after the last one the agent is told to answer now
      (``forced_tokens_*`` new tokens by question type).
    - ``frames``: overview frame budget K (``EpisodeInput.frames_k`` overrides it per episode);
      ``overview_sampling`` is the video engine's overview mode.
    - ``timestamps``: precede each overview frame with ``<t seconds>`` (off = paper-compat eval).
    - ``min_pixels``/``max_pixels``: overview pixel budget; window frames use ``crop``'s budget.
    - ``think_prefix``: text pre-filled after the main agent's generation prompt (prompt tokens,
      not completion); ``system_prompt``: a file that replaces the system prompt verbatim;
      ``user_template``: a file that replaces the first user turn's text, a ``string.Template``
      with named fields (``paravt.agent.prompts.USER_TEMPLATE_FIELDS``: ``${question}``,
      ``${options}``, ``${instruction}``, ``${video_path}``, ``${video_name}``,
      ``${question_type}``), e.g. to evaluate a released checkpoint with the user prompt it was
      trained on (docs/INFER.md, "Prompts").
    - ``temperature`` 0 means greedy.
    - ``tool_prompt``: how the crop_video schema reaches the model (exactly once). ``native``: the
      chat template's own ``tools=`` section, or a Hermes-style ``<tools>`` block in the system
      prompt where the template has none (Qwen2.5-VL); ``paravt``: our wording
      (``Its definition: {json}``); ``auto``: ``native`` for Qwen3-VL (its templates render
      ``tools=`` in the format its tool use was trained on), ``paravt`` for Qwen2.5-VL (its vision
      template has no tools section, and paravt's wording is what existing runs used).
    - ``tool_response_layout``: ``template`` — one ``role: tool`` message per call, frames then the
      text, wrapped by the template's tool-response rendering; ``paravt`` — the reference layout,
      one user message per call holding the window's frames and then
      ``<tool_response>\n{text}\n</tool_response>``.
    - ``reuse_cache``: a local model (``hf``, the trainer's policy) keeps each episode's KV cache
      and vision features between its turns, so a turn prefills only its new tokens and frames
      (``paravt.backends.episode_state``; docs/INFER.md, "Prefill once per episode"); the tokens
      are the same either way. ``reuse_cache_mb``: the memory those kept states may take in all
      (MiB, on the model's device); a state that would go past it is not kept, and that
      episode's next turn prefills in full.
    - ``schedule``: how a batch of episodes advances. ``rounds``: together, turn by turn (one
      generate call for every active episode, then one tool pass for all of them); ``episodes``:
      each on its own (its next turn is submitted as soon as its tools return, and tools run while
      other episodes generate; ``paravt.agent.async_engine``); ``auto``: ``episodes`` with a
      backend that generates asynchronously (``openai``, vLLM's async engine) and samples without
      a lockstep, ``rounds`` otherwise (``hf``, the trainer's policy). Records are the same under
      greedy decoding either way; only timings and how calls are batched differ.
    """

    mode: Literal["parallel", "sequential", "direct"] = "parallel"
    evidence: Literal["frames", "subagent"] = "frames"
    max_turns: int = 3
    max_parallel: int = 5
    frames: int = 64
    overview_sampling: Literal["exact", "keyframe", "qwen-vl-utils"] = "exact"
    timestamps: bool = True
    max_new_tokens: int = 2048
    forced_tokens_mcq: int = 64
    forced_tokens_tvg: int = 128
    forced_tokens_oe: int = 256
    subagent_max_tokens: int = 512
    temperature: float = 0.0
    top_p: float = 1.0
    min_pixels: int = 100352
    max_pixels: int = 602112
    think_prefix: str = ""
    system_prompt: str | None = None
    user_template: str | None = None
    keep_images: bool = True
    crop: CropSettings = field(default_factory=CropSettings)
    tool_prompt: Literal["auto", "native", "paravt"] = "auto"
    tool_response_layout: Literal["template", "paravt"] = "template"
    reuse_cache: bool = True
    reuse_cache_mb: int = 8192
    schedule: Literal["auto", "rounds", "episodes"] = "auto"

    def __post_init__(self) -> None:
        check_choices(self)  # mode, evidence, overview_sampling, tool_prompt, ... (Literal)
        for name in (
            "max_turns",
            "max_parallel",
            "frames",
            "max_new_tokens",
            "subagent_max_tokens",
            "reuse_cache_mb",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.min_pixels > self.max_pixels:
            raise ConfigError(
                f"min_pixels ({self.min_pixels}) is larger than max_pixels ({self.max_pixels})"
            )
        # cuda: NVDEC decoding (paravt.video.nvdec); refused here, before any model loads, where
        # this process sees no CUDA device
        check_crop_device(self.crop.device)

    @property
    def reuse_budget_bytes(self) -> int:
        """What the engine hands its backend: the kept states' byte budget, 0 with reuse off."""
        return self.reuse_cache_mb * 2**20 if self.reuse_cache else 0

    def resolved_tool_prompt(self, arch: str | None) -> str:
        """``native`` or ``paravt``: ``auto`` picks by model family (see ``tool_prompt``)."""
        if self.tool_prompt != "auto":
            return self.tool_prompt
        return "paravt" if arch == "qwen2.5-vl" else "native"

    def forced_tokens(self, question_type: str) -> int:
        return {
            "mcq": self.forced_tokens_mcq,
            "tvg": self.forced_tokens_tvg,
        }.get(question_type, self.forced_tokens_oe)


@dataclass
class BackendConfig:
    """Which model answers, and how to reach it.

    ``kind``: ``hf`` (local transformers model; ``model`` is a Hub id or a folder) or ``openai``
    (an OpenAI-compatible chat server at ``base_url``; ``model`` is the served model name).
    ``preprocess_device``: where frames become ``pixel_values`` for ``hf`` (``auto``: the model's
    GPU if it has one, else the CPU). ``resize_arch`` (``openai``): the size rule frames are
    resized under before they are sent. ``api_key`` is sent as a bearer token (vLLM/SGLang accept any value unless started with one).
    """

    kind: Literal["hf", "openai"] = "hf"
    model: str = DEFAULT_MODEL_ID
    device: str = "auto"
    dtype: str = "auto"
    batch_size: int = 8
    attn_implementation: str | None = None
    preprocess_device: str = "auto"
    base_url: str = "http://127.0.0.1:8000/v1"
    api_key: str = "EMPTY"
    concurrency: int = 8
    #: ``openai``: attempts after a failed request (the SDK's retries: connection errors,
    #: timeouts, 408/409/429/5xx, backoff from 0.5 s doubling to 8 s or the server's Retry-After)
    retries: int = 3
    #: deprecated, not read (the SDK's backoff, above); removed in paravt 0.2
    backoff_s: float = 1.0
    #: ``openai``: the longest one attempt may take
    timeout_s: float = 300.0
    image_format: Literal["jpeg", "png"] = "jpeg"
    tool_role: Literal["user", "tool"] = "user"
    #: ``openai``: frames are resized to their pixel budget with this arch's size rule before
    #: they are sent (``none``: full resolution, the server's processor decides)
    resize_arch: Literal["qwen3-vl", "qwen2.5-vl", "none"] = "qwen3-vl"
    #: ``openai``: how ``engine.think_prefix`` reaches the server. ``continue``: a final assistant
    #: message with ``continue_final_message`` (vLLM, SGLang); ``template``: ``chat_template`` with
    #: the pre-fill after its generation prompt, in ``chat_template_kwargs`` (``transformers
    #: serve``, which answers the ``continue`` fields with HTTP 422); ``continue`` also sends
    #: ``skip_special_tokens: false``, which vLLM and SGLang take
    prefill_via: Literal["continue", "template"] = "continue"
    #: ``openai`` with ``prefill_via=template``: the model's chat template, a ``.jinja`` file or
    #: the model folder (the template the server renders must be the one sent)
    chat_template: str | None = None

    def __post_init__(self) -> None:
        check_choices(self)  # kind, image_format, tool_role, resize_arch, prefill_via (Literal)
        if self.concurrency < 1 or self.batch_size < 1:
            raise ConfigError("backend concurrency and batch_size must be at least 1")
        if self.retries < 0:
            raise ConfigError(f"backend retries must be >= 0, got {self.retries}")
        if self.backoff_s != 1.0:
            deprecated(
                "backend.backoff_s",
                "it is no longer read (the openai SDK backs off itself: 0.5 s, doubling up to 8 "
                "s, or the server's Retry-After); drop the key",
            )


REDACTED = "<redacted>"


def redacted_backend(backend: dict) -> dict:
    """A ``BackendConfig`` (as a dict) the way outputs record it: a real ``api_key`` is replaced
    by a marker, so printed and saved configs never carry the secret (vLLM's ``EMPTY`` stays)."""
    out = dict(backend)
    if out.get("api_key") not in (None, "", "EMPTY"):
        out["api_key"] = REDACTED
    return out


@dataclass
class InferConfig:
    """``paravt infer``: which model (``backend``), how episodes run (``engine``).

    ``question_type`` ``auto`` means ``mcq`` when options are given, else ``oe``. Questions read
    from stdin run ``batch_size`` episodes at a time (answers stream out batch by batch).
    """

    backend: BackendConfig = field(default_factory=BackendConfig)
    engine: EngineConfig = field(default_factory=EngineConfig)
    question_type: Literal["auto", QuestionType] = "auto"
    batch_size: int = 8

    def __post_init__(self) -> None:
        check_choices(self)  # question_type (Literal)
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1, got {self.batch_size}")
