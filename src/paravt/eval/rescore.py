"""Re-score an existing results file without a model (``paravt eval score``).

Each result line carries its sample (gold, options, question type, groups), the model's raw
final turn and its extracted answer, so scoring rules, all three variants and the open-ended judge
can be recomputed after the run (a file written before the variants were stored gains them).
The summary keeps the protocol of the run that produced the predictions when a
``summary*.json`` sits beside the results file, and records the new scoring settings.
"""

from __future__ import annotations

import json
from pathlib import Path

from paravt.errors import UserError
from paravt.eval.judge import RuleJudge
from paravt.eval.metrics import DEFAULT_VARIANT, VARIANTS, summarize_results
from paravt.eval.results import iter_unique, read_results
from paravt.eval.scoring import score_row

__all__ = ["rescore"]


def _neighbour_summary(results_path: Path) -> dict | None:
    name = results_path.name
    if name.startswith("results") and name.endswith(".jsonl"):
        candidate = results_path.with_name(
            "summary" + name[len("results") : -len(".jsonl")] + ".json"
        )
        if candidate.is_file():
            try:
                return json.loads(candidate.read_text())
            except json.JSONDecodeError:
                return None
    return None


def rescore(results_path: str | Path, variant: str = DEFAULT_VARIANT, judge=None) -> dict:
    """Summary of ``results_path`` re-scored under every variant (and ``judge`` for open-ended);
    ``variant`` is the headline."""
    if variant not in VARIANTS:
        raise UserError(f"--variant {variant!r}: choose one of {', '.join(VARIANTS)}")

    judge = judge or RuleJudge()
    path = Path(results_path)
    raw = read_results(path)
    results = list(iter_unique(raw))
    if not results:
        raise UserError(f"{path}: no results to score")
    splits = sorted({r.split for r in results})
    if len(splits) != 1:
        raise UserError(
            f"{path}: results of several splits ({', '.join(splits)}); score one at a time"
        )
    rescored = [score_row(r, judge=judge) for r in results]
    metrics = summarize_results(splits[0], rescored)
    previous = _neighbour_summary(path) or {}
    protocol = dict(previous.get("protocol") or {})
    protocol["scoring"] = {
        "variant": variant,
        "open_ended_judge": judge.describe(),
        "rescored_from": str(path),
    }
    return {
        "benchmark": splits[0],
        "variant": variant,
        "headline": metrics["variants"][variant],
        "metrics": metrics,
        "duplicates": len(raw) - len(results),
        "protocol": protocol,
    }
