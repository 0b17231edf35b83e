"""Several evaluation runs side by side: the numbers behind a paper's main table.

A *run* is a folder written by ``paravt eval`` (or ``eval merge``) — one ``summary.json`` for one
split — or a folder whose direct subfolders are such runs (one model over several splits). Every
run must cover the same splits, so each column compares like with like. Values are read from the
chosen scoring variant. The relative gain of a run over the baseline is the mean, over splits,
of ``(run - baseline) / baseline`` on each split's headline metric — the "average relative gain"
papers quote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from paravt.errors import UserError
from paravt.eval.metrics import DEFAULT_VARIANT, VARIANTS

__all__ = ["compare_runs"]

SUMMARY_FILE = "summary.json"
COUNT_KEYS = ("n_counted",)  # variant entries that are counts, not scores: not compared
NOT_METRICS = ("headline", "value", *COUNT_KEYS)


@dataclass
class RunRow:
    """One run: its name, folder, ``(split, metric) → value`` and per-split headline values."""

    name: str
    path: str
    values: dict[tuple[str, str], float]
    headline: dict[str, float]
    wall_s: float | None = None
    avg: float = 0.0  # mean of the headline values over splits
    gain: float | None = None  # mean relative gain over the baseline (fraction), None: no baseline


@dataclass
class Comparison:
    variant: str
    splits: list[str]
    columns: list[tuple[str, str]]  # (split, metric), headline metric first within a split
    rows: list[RunRow]
    baseline: str | None = None
    skipped_gain: list[str] = field(default_factory=list)  # splits whose baseline value is 0

    def to_dict(self) -> dict:
        return {
            "variant": self.variant,
            "splits": self.splits,
            "columns": [f"{s}/{m}" for s, m in self.columns],
            "baseline": self.baseline,
            "skipped_gain": self.skipped_gain,
            "rows": [
                {
                    "name": r.name,
                    "path": r.path,
                    "avg": r.avg,
                    "gain": r.gain,
                    "wall_s": r.wall_s,
                    "values": {f"{s}/{m}": v for (s, m), v in r.values.items()},
                }
                for r in self.rows
            ],
        }


def _read_summary(path: Path) -> dict:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise UserError(f"{path}: not a readable eval summary ({e})") from None
    if (
        not isinstance(doc, dict)
        or "benchmark" not in doc
        or "variants" not in doc.get("metrics", {})
    ):
        raise UserError(f"{path}: not an eval summary (no benchmark and metrics.variants)")
    return doc


def load_run(folder: str | Path) -> dict[str, dict]:
    """``split → summary`` of one run folder (see the module docstring)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"eval report: {folder} is not a folder (pass eval --out folders)")
    own = folder / SUMMARY_FILE
    files = [own] if own.is_file() else sorted(folder.glob(f"*/{SUMMARY_FILE}"))
    if not files:
        raise UserError(
            f"eval report: {folder} is not an eval run: no {SUMMARY_FILE} in it or in its "
            "subfolders (pass the --out folder of `paravt eval`, or a folder of them)"
        )
    out: dict[str, dict] = {}
    for f in files:
        doc = _read_summary(f)
        split = str(doc["benchmark"])
        if split in out:
            raise UserError(f"eval report: {folder} holds split {split} twice ({f.parent.name})")
        out[split] = doc
    return out


def _metrics(variant_values: dict) -> list[str]:
    head = variant_values.get("headline")
    rest = [k for k in variant_values if k not in NOT_METRICS and k != head]
    return ([head] if head else []) + rest


def _with_baseline(folders: list[str], baseline: str | None) -> tuple[list[Path], Path | None]:
    """The run folders, with ``baseline`` added first when it is not among them, and its path."""
    paths = [Path(f) for f in folders]
    if baseline is None:
        return paths, None
    for p in paths:
        if p.name == baseline or p.resolve() == Path(baseline).resolve():
            return paths, p
    return [Path(baseline), *paths], Path(baseline)


def _check_same_splits(runs: list[tuple[Path, dict[str, dict]]]) -> list[str]:
    """The splits every run covers (an error naming the first run that differs)."""
    first, splits = runs[0][0], sorted(runs[0][1])
    for p, run in runs[1:]:
        if sorted(run) == splits:
            continue
        extra = sorted(set(run) - set(splits))
        lacking = sorted(set(splits) - set(run))
        what = (
            f"has {', '.join(extra)} that {first} lacks"
            if extra
            else f"lacks {', '.join(lacking)} that {first} has"
        )
        raise UserError(f"eval report: runs cover different splits: {p} {what}")
    return splits


def _run_row(path: Path, run: dict[str, dict], variant: str, columns: list) -> RunRow:
    """One run's values under ``variant`` (its wall time only when every split recorded one)."""
    splits = sorted(run)
    vals = {s: run[s]["metrics"]["variants"][variant] for s in splits}
    walls = [(run[s].get("timing") or {}).get("wall_s") for s in splits]
    known = [w for w in walls if w is not None]
    row = RunRow(
        name=path.name or str(path),
        path=str(path),
        values={(s, m): float(vals[s][m]) for s, m in columns if m in vals[s]},
        headline={s: float(vals[s]["value"]) for s in splits},
        wall_s=sum(known) if len(known) == len(walls) else None,
    )
    row.avg = sum(row.headline.values()) / len(splits)
    return row


def _add_gains(cmp: Comparison, base: RunRow) -> None:
    """Each row's mean relative gain over ``base`` (splits where the baseline is 0 are skipped)."""
    cmp.baseline = base.name
    usable = [s for s in cmp.splits if base.headline[s] != 0]
    cmp.skipped_gain = [s for s in cmp.splits if s not in usable]
    for row in cmp.rows:
        gains = [(row.headline[s] - base.headline[s]) / base.headline[s] for s in usable]
        row.gain = sum(gains) / len(gains) if gains else None


def compare_runs(
    folders: list[str], variant: str = DEFAULT_VARIANT, baseline: str | None = None
) -> Comparison:
    """The comparison of ``folders`` (a ``baseline`` not among them is added as the first row):
    validate (the variant, the same splits everywhere), collect (one row per run), then the
    gains over the baseline."""
    if variant not in VARIANTS:
        raise UserError(f"--variant {variant}: choose one of {', '.join(VARIANTS)}")
    paths, base_path = _with_baseline(folders, baseline)
    runs = [(p, load_run(p)) for p in paths]
    splits = _check_same_splits(runs)
    first = runs[0][1]
    columns = [(s, m) for s in splits for m in _metrics(first[s]["metrics"]["variants"][variant])]
    rows = [_run_row(p, run, variant, columns) for p, run in runs]
    cmp = Comparison(variant, splits, columns, rows)
    if base_path is not None:
        _add_gains(cmp, rows[paths.index(base_path)])
    return cmp
