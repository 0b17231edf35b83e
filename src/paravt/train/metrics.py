"""docs/PROTOCOL.md §5.7's per-step training metrics, and the run folder's ``metrics.jsonl``.

``episode_stats`` turns one episode (record + reward breakdown) into a small dict of numbers;
``step_metrics`` aggregates the gathered dicts of the whole step (all ranks) into the logged keys.
``MetricsJsonl`` is a ``TrainerCallback`` writing one row per logging step on the main process;
``truncate_after`` cuts rows past a checkpoint's step before a resume so the file stays continuous
(no duplicated, no missing steps) after a crash.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from transformers import TrainerCallback

from paravt.rewards import RewardBreakdown
from paravt.schema.episodes import EpisodeRecord

__all__: list[str] = []  # nothing here is for the other rooms


def episode_stats(
    record: EpisodeRecord,
    breakdown: RewardBreakdown | None,
    k: int,
    generated_tokens: int,
    total_tokens: int,
) -> dict:
    calls = [c for c in record.calls if c.status != "ignored"]
    counts = record.tool_counts
    tool_turns = sum(1 for t in record.turns if t.n_calls > 0)
    # the reward's own terms (``RewardBreakdown.TERMS``); a failed episode has none (NaN)
    terms = (
        breakdown.terms()
        if breakdown is not None
        else dict.fromkeys(RewardBreakdown.names(), math.nan)
    )
    return {
        **terms,
        "reward_terms": list(terms),
        "executed_ok": counts.executed_ok,
        "calls": len(calls),
        "call_errors": sum(1 for c in calls if c.status == "error"),
        "parse_errors": counts.parse_errors,
        "turns": len(record.turns),
        "tool_turns": tool_turns,
        "k": int(k),
        "gen_tokens": int(generated_tokens),
        "total_tokens": int(total_tokens),
        "episode_error": int(record.status != "ok"),
    }


def _mean(xs: list[float]) -> float:
    xs = [x for x in xs if not (isinstance(x, float) and math.isnan(x))]
    return sum(xs) / len(xs) if xs else 0.0


def _per(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator else 0.0


def _reward_means(stats: list[dict]) -> dict[str, float]:
    """``reward/<term>``: each reward term's mean over the step's episodes, for the terms the
    breakdowns reported (``RewardBreakdown.TERMS``)."""
    names = next((s["reward_terms"] for s in stats if "reward_terms" in s), RewardBreakdown.names())
    return {f"reward/{k}": _mean([s.get(k, math.nan) for s in stats]) for k in names}


def _tool_rates(stats: list[dict], n: int) -> dict[str, float]:
    calls = sum(s["calls"] for s in stats)
    return {
        "tools/kappa": sum(1 for s in stats if s["executed_ok"] > 0) / n,
        "tools/calls_per_episode": calls / n,
        "tools/calls_per_turn": _per(calls, sum(s["tool_turns"] for s in stats)),
        "tools/parse_failure_rate": _per(sum(s["parse_errors"] for s in stats), calls),
        "tools/error_rate": _per(sum(s["call_errors"] for s in stats), calls),
    }


def _lengths(stats: list[dict]) -> dict[str, float]:
    generated = [s["gen_tokens"] for s in stats]
    return {
        "completions/mean_length": _mean([float(g) for g in generated]),
        "completions/max_length": float(max(generated, default=0)),
        "completions/min_length": float(min(generated, default=0)),
        "completions/mean_total_length": _mean([float(s["total_tokens"]) for s in stats]),
    }


def step_metrics(
    stats: list[dict], zero_variance_share: float, k_choices: list[int]
) -> dict[str, float]:
    """Aggregate one step's episode stats (all ranks) into the metrics of docs/PROTOCOL.md §5.7."""
    n = max(len(stats), 1)
    out = {
        **_reward_means(stats),
        **_tool_rates(stats, n),
        "groups/zero_variance_share": float(zero_variance_share),
        "frames/k_mean": _mean([float(s["k"]) for s in stats]),
        "episode/turns": _mean([float(s["turns"]) for s in stats]),
        "episode/error_rate": sum(s["episode_error"] for s in stats) / n,
        **_lengths(stats),
    }
    for k in sorted(set(list(k_choices) + [s["k"] for s in stats])):
        out[f"frames/k_share_{k}"] = sum(1 for s in stats if s["k"] == k) / n
    return out


def read_jsonl(path: str | Path) -> list[dict]:
    p = Path(path)
    if not p.is_file():
        return []
    rows = []
    for line in p.read_text().splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except (
            ValueError
        ):  # a line torn by a kill mid-write: drop it, the step is re-logged on resume
            continue
    return rows


def truncate_after(path: str | Path, step: int) -> int:
    """Keep rows with ``step <= step`` (and drop torn lines); returns how many rows were removed."""
    p = Path(path)
    if not p.is_file():
        return 0
    text = p.read_text().splitlines()
    kept, removed = [], 0
    for line in text:
        try:
            row = json.loads(line)
        except ValueError:
            removed += 1
            continue
        if int(row.get("step", 0)) <= step:
            kept.append(json.dumps(row))
        else:
            removed += 1
    tmp = p.with_suffix(p.suffix + ".tmp")
    tmp.write_text("".join(line + "\n" for line in kept))
    tmp.replace(p)
    return removed


class MetricsJsonl(TrainerCallback):
    """One JSON row per logging step (main process only); the end-of-training summary goes aside."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        if "train_runtime" in logs:  # the end-of-training summary shares the last step's number
            (self.path.parent / "train_summary.json").write_text(
                json.dumps({"step": state.global_step, **logs}, indent=2, default=float)
            )
            return
        row = {"step": int(state.global_step), "epoch": state.epoch}
        row.update({k: v for k, v in logs.items() if isinstance(v, (int, float)) or v is None})
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()
