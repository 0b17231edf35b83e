"""Split-level metrics from per-sample results, in three scoring variants.

The variants differ in how an answer is read (``paravt.eval.scoring``) and, where the rules
differ, in how a split is aggregated:

- ``robust`` (the default headline): paravt's own answer reading with each benchmark's own
  aggregation — MLVU dev M-Avg (mean over task types of per-task accuracy), pooled accuracy
  elsewhere, Charades-STA mIoU and R@{0.3, 0.5, 0.7} with hull IoU.
- ``benchmark``: each benchmark's published letter rule with the same aggregation as ``robust``.
- ``paper``: the reference harness behind the ParaVT paper's table — its letter rule on every
  split, MLVU pooled over all questions, MMVU open-ended items scored by letter matching (≈0),
  and Charades-STA errors left out of the denominator.
- The generic ``jsonl`` split: accuracy over its mcq/oe questions and mIoU / R@t over its tvg
  questions, side by side (a split may mix them), each read by the variant.

One rule says which questions are in a denominator, and the live progress line, the groups and
the headline all follow it (``in_accuracy``): accuracy counts every question scored by
correctness (multiple-choice and open-ended), errors included (scored 0); mIoU and R@t count the
grounding (``tvg``) questions, which never enter an accuracy. ``denominators`` in the summary
says how many questions each holds. ``errors`` counts the failures by kind. Accuracy-like values
are fractions in [0, 1]; tables print percentages.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from paravt.eval.results import ResultRow

__all__ = ["DEFAULT_VARIANT", "VARIANTS"]

VARIANTS = ("robust", "benchmark", "paper")
DEFAULT_VARIANT = "robust"
RECALL_THRESHOLDS = (0.3, 0.5, 0.7)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _correct(result: ResultRow, variant: str) -> float:
    return float(result.score_for(variant).get("correct", 0.0))


def in_accuracy(result: ResultRow) -> bool:
    """Is ``result`` in an accuracy's denominator? Every question scored by correctness is;
    a grounding question (scored by IoU) is in mIoU and R@t instead."""
    return result.question_type != "tvg"


def denominators(split: str, results: list[ResultRow]) -> dict:
    """How many questions each kind of number counts: ``accuracy`` (scored by correctness,
    errors included) and ``grounding`` (mIoU and R@t), the latter only where there are any."""
    grounding = sum(1 for r in results if split == "charades" or not in_accuracy(r))
    out = {"accuracy": len(results) - grounding}
    if grounding:
        out["grounding"] = grounding
    return out


def _group_values(result: ResultRow, key: str) -> list[str]:
    v = (result.sample.get("groups") or {}).get(key)
    if v is None:
        return []
    return [str(x) for x in v] if isinstance(v, list) else [str(v)]


def accuracy_by_group(results: list[ResultRow], variant: str = DEFAULT_VARIANT) -> dict:
    """``{group key: {value: {n, correct, accuracy}}}`` (a multi-label sample counts in each),
    over the questions ``in_accuracy`` counts, as the headline; a group that holds grounding
    questions adds ``grounding_n`` and their ``miou``."""
    keys = sorted({k for r in results for k in (r.sample.get("groups") or {})})
    out: dict = {}
    for key in keys:
        buckets: dict[str, list[float]] = defaultdict(list)
        ious: dict[str, list[float]] = defaultdict(list)
        for r in results:
            for v in _group_values(r, key):
                if in_accuracy(r):
                    buckets[v].append(_correct(r, variant))
                else:
                    ious[v].append(float(r.score_for(variant).get("iou", 0.0)))
        groups: dict = {}
        for v in sorted(set(buckets) | set(ious)):
            xs = buckets.get(v, [])
            groups[v] = {"n": len(xs), "correct": sum(xs), "accuracy": _mean(xs) if xs else None}
            if v in ious:
                groups[v].update(grounding_n=len(ious[v]), miou=_mean(ious[v]))
        out[key] = groups
    return out


def _grounding(results: list[ResultRow], variant: str) -> dict:
    counted = results
    if variant == "paper":  # the reference dropped failed samples from the denominator
        counted = [r for r in results if r.ok]
    ious = [float(r.score_for(variant).get("iou", 0.0)) for r in counted]
    out = {"miou": _mean(ious)}
    for t in RECALL_THRESHOLDS:
        out[f"r@{t}"] = _mean([float(i >= t) for i in ious])
    if counted is not results:
        out["n_counted"] = len(counted)
    return out


def _mixed_types(results: list[ResultRow], variant: str) -> dict:
    """A generic JSON-lines split may mix question types: accuracy over the questions scored by
    correctness (mcq, oe), mIoU and R@t over the grounding (tvg) ones; the headline is accuracy
    when there is any such question, else mIoU."""
    tvg = [r for r in results if not in_accuracy(r)]
    rest = [r for r in results if in_accuracy(r)]
    out: dict = {}
    if rest or not tvg:
        out["accuracy"] = _mean([_correct(r, variant) for r in rest])
    if tvg:
        out.update(_grounding(tvg, variant))
    headline = "accuracy" if "accuracy" in out else "miou"
    return {"headline": headline, "value": out[headline], **out}


def _variant(split: str, variant: str, results: list[ResultRow]) -> dict:
    """One variant's metrics of one split."""
    if split == "jsonl":
        return _mixed_types(results, variant)
    if split == "charades":
        metrics = _grounding(results, variant)
        return {"headline": "miou", "value": metrics["miou"], **metrics}
    scores = [r.score_for(variant) for r in results]
    pooled = _mean([float(s.get("correct", 0.0)) for s in scores])
    if split == "mlvu" and variant != "paper":
        tasks = accuracy_by_group(results, variant).get("task", {})
        value = _mean([g["accuracy"] for g in tasks.values()])
        return {"headline": "m_avg", "value": value, "m_avg": value, "accuracy": pooled}
    out = {"headline": "accuracy", "value": pooled, "accuracy": pooled}
    if split == "mmvu":
        oe = [s for r, s in zip(results, scores, strict=True) if r.question_type == "oe"]
        if oe:
            out["open_ended_accuracy"] = _mean([float(s.get("correct", 0.0)) for s in oe])
            if variant != "paper":
                out["open_ended_f1"] = _mean([float(s.get("f1", 0.0)) for s in oe])
    return out


def running_line(split: str, variant: str, results: list[ResultRow]) -> str:
    """The live progress line of a run: the headline of ``variant`` over the results so far, by
    the same rule as the summary (``_variant``), with its denominator."""
    values = _variant(split, variant, results)
    counts = denominators(split, results)
    names = {"accuracy": "acc", "m_avg": "M-Avg", "miou": "mIoU"}
    parts = [f"{names[values['headline']]} {100.0 * values['value']:5.1f}%"]
    if split == "jsonl" and "miou" in values and values["headline"] != "miou":
        parts.append(f"mIoU {100.0 * values['miou']:5.1f}%")
    shown = f"{counts['accuracy']} scored" if split != "charades" else ""
    if counts.get("grounding") and split != "charades":
        shown += f", {counts['grounding']} grounding"
    errors = sum(1 for r in results if r.error is not None)
    return "  ".join(parts) + (f" ({shown})" if shown else "") + f"  errors {errors}"


def tool_usage(results: list[ResultRow]) -> dict:
    """Calls executed and calls attempted (per sample, and the share with ≥1), average rounds.

    ``avg_calls``/``usage_rate`` count calls that ran; ``avg_attempted``/``attempt_rate`` count
    every parsed call — over the cap, ignored in the forced-answer turn, or failed with a tool
    error included — which is what the reference's table counts (older lines lack it, and
    ``ResultRow.from_dict`` puts the parseable count in its place).
    """
    calls = [r.tools.executed for r in results]
    attempted = [r.tools.attempted for r in results]
    rounds = [r.tools.turns for r in results]
    return {
        "avg_calls": _mean([float(c) for c in calls]),
        "usage_rate": _mean([float(c > 0) for c in calls]),
        "avg_attempted": _mean([float(c) for c in attempted]),
        "attempt_rate": _mean([float(c > 0) for c in attempted]),
        "avg_turns": _mean([float(t) for t in rounds]),
    }


def summarize_results(split: str, results: Iterable[ResultRow]) -> dict:
    """All metrics of one split, every variant, in a deterministic order (``by_group`` is the
    robust reading)."""
    results = sorted(results, key=lambda r: (r.index, r.id))
    errors = [r for r in results if r.error is not None]
    kinds = Counter(r.error.kind for r in errors if r.error is not None)
    groups = accuracy_by_group(results)
    out = {
        "split": split,
        "n": len(results),
        "scored": len(results) - len(errors),
        "errors": len(errors),
        "error_kinds": dict(sorted(kinds.items())),
        "denominators": denominators(split, results),
        "variants": {v: _variant(split, v, results) for v in VARIANTS},
        "tools": tool_usage(results),
    }
    if split != "charades":
        out["by_group"] = groups
    problems = [
        {"id": r.id, "problem": r.error.message}
        for r in errors
        if r.error is not None and r.error.kind == "annotation"
    ]
    if problems:
        out["annotation_problems"] = problems
    judged = Counter(str(r.score["judged_by"]) for r in results if "judged_by" in r.score)
    if judged:
        out["judged_by"] = dict(sorted(judged.items()))
    return out
