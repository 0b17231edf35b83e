"""``EvalConfig``: every knob of one ``paravt eval`` run, recorded in its outputs.

Flags, a YAML file and ``--set key=value`` overrides all land here (``paravt.config``). The
episode protocol is the engine's own ``EngineConfig`` (nested, so ``--set engine.max_turns=2``
works and eval can never drift from ``infer``/``train``), the model side is ``BackendConfig``.
``script`` selects the scripted backend (a replay of given completions, for smoke tests and CI)
instead of ``backend``.

The fields that decide what the model sees or how answers are produced form the run's
*protocol*; a resumed run or a shard being merged must match it exactly (``protocol_view``),
while paths, batch size, concurrency and scoring knobs may differ.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal, get_args

from paravt.agent.config import REDACTED, BackendConfig, EngineConfig, redacted_backend
from paravt.config import check_choices
from paravt.errors import ConfigError, UserError
from paravt.eval.metrics import DEFAULT_VARIANT, VARIANTS

__all__ = ["EvalConfig", "SHEETS_OF"]

# Top-level knobs that do not change any model input or output.
NON_PROTOCOL_FIELDS = frozenset(
    {
        "data",
        "videos",
        "out",
        "resume",
        "retry_errors",
        "limit",
        "batch_size",
        "variant",
        "judge_base_url",
        "judge_model",
        "judge_api_key",
        "shard",
        "progress",
        "sheets",
        "sheets_of",
        "episodes",
    }
)
# Backend knobs that change throughput or transport, not answers.
NON_PROTOCOL_BACKEND_FIELDS = frozenset(
    {
        "device",
        "batch_size",
        "api_key",
        "concurrency",
        "retries",
        "backoff_s",
        "timeout_s",
        "base_url",
    }
)

# which episodes get a sheet: the first ones run, or the failures (wrong answer or error)
SheetsOf = Literal["first", "errors"]
SHEETS_OF: tuple[str, ...] = get_args(SheetsOf)


@dataclass
class EvalConfig:
    benchmark: str = ""
    data: str = ""
    videos: str = ""
    out: str = ""
    backend: BackendConfig = field(default_factory=BackendConfig)
    script: str | None = None
    engine: EngineConfig = field(default_factory=EngineConfig)
    # Video-MME with subtitles: "frames" (lines shown at the sampled frames), "all", or "none"
    subtitles: Literal["frames", "all", "none"] = "frames"
    # run control
    limit: int | None = None
    shard: str = "0/1"
    resume: bool = False
    retry_errors: bool = False
    batch_size: int = 8
    progress: bool = True
    # episode sheets (PNG) written to OUT/sheets/: of the first N episodes, or of N failures
    sheets: int = 0
    sheets_of: SheetsOf = "first"
    # OUT/episodes.jsonl: every episode's turns and calls, for `paravt view` (text only)
    episodes: bool = True
    # scoring: the headline variant (every variant is always in the summary)
    variant: str = DEFAULT_VARIANT
    judge_base_url: str | None = None
    judge_model: str | None = None
    judge_api_key: str | None = None

    def __post_init__(self) -> None:
        check_choices(self)  # subtitles, sheets_of (Literal)
        if self.variant not in VARIANTS:
            raise ConfigError(f"variant {self.variant!r}: choose one of {', '.join(VARIANTS)}")
        if self.batch_size < 1:
            raise ConfigError(f"batch_size must be at least 1 (got {self.batch_size})")
        if self.sheets < 0:
            raise ConfigError(f"sheets must be non-negative (got {self.sheets})")
        if self.limit is not None and self.limit < 0:
            raise ConfigError(f"limit must be non-negative (got {self.limit})")
        parse_shard(self.shard)
        if self.retry_errors and not self.resume:
            raise ConfigError("retry_errors only applies to a resumed run: add --resume")

    @property
    def backend_name(self) -> str:
        return "scripted" if self.script else self.backend.kind


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/8"`` → ``(2, 8)``: shard indices count from 0."""
    try:
        i_s, n_s = str(text).split("/")
        i, n = int(i_s), int(n_s)
    except ValueError:
        raise UserError(f"--shard {text!r}: expected I/N, e.g. 0/4") from None
    if n < 1 or not 0 <= i < n:
        raise UserError(f"--shard {text!r}: need 0 <= I < N (shards count from 0)")
    return i, n


def shard_tag(shard: str) -> str:
    """File-name suffix for a shard: empty for an unsharded run, ``-02-of-08`` otherwise."""
    i, n = parse_shard(shard)
    return "" if n == 1 else f"-{i:02d}-of-{n:02d}"


def protocol_view(cfg: EvalConfig | dict) -> dict:
    """The part of the config that must not change when a run is resumed or merged."""
    data = dataclasses.asdict(cfg) if dataclasses.is_dataclass(cfg) else dict(cfg)
    out = {k: v for k, v in sorted(data.items()) if k not in NON_PROTOCOL_FIELDS}
    if isinstance(out.get("backend"), dict):
        out["backend"] = {
            k: v for k, v in sorted(out["backend"].items()) if k not in NON_PROTOCOL_BACKEND_FIELDS
        }
    return out


def redacted(cfg: EvalConfig) -> dict:
    """The config as recorded in outputs: secrets replaced by a marker."""
    data = dataclasses.asdict(cfg)
    if data.get("judge_api_key"):
        data["judge_api_key"] = REDACTED
    data["backend"] = redacted_backend(data["backend"])
    return data
