"""Training curves from ``metrics.jsonl``: the paper's training-dynamics figure, or any metric.

One line per run folder in every panel, so ``paravt plot runs/paragrpo runs/vanilla_grpo`` shows
the paper's contrast (vanilla GRPO: format ≈0.13, κ → 0; PARA-GRPO: format ≈0.64, κ ≈0.21).
``metrics`` picks other logged keys (``reward/acc``, ``tools/calls_per_turn``, ``frames/k_mean``,
``loss``, ...), one panel each.
"""

from __future__ import annotations

import math
from pathlib import Path

from paravt.errors import UserError
from paravt.train.metrics import read_jsonl

__all__ = ["plot_runs", "training_figure"]

PANELS = (("reward/fmt", "format reward R_fmt"), ("tools/kappa", "tool-call rate κ"))
PANEL_COLUMNS = 3  # panels per row when many metrics are drawn


def _numeric_keys(rows: list[dict]) -> list[str]:
    keys = {k for r in rows for k, v in r.items() if isinstance(v, (int, float)) and k != "step"}
    return sorted(keys)


def _read_runs(run_dirs: list[str], metrics_file: str, wanted: list[str]) -> dict[str, list]:
    """``run name -> rows`` of each run's metrics file; a run that logged none of ``wanted``, or
    a metric no run logged, is an error listing what was logged."""
    series = {}
    for rd in run_dirs:
        path = Path(rd) / metrics_file
        rows = read_jsonl(path)
        if not any(key in r for r in rows for key in wanted):
            known = ", ".join(_numeric_keys(rows)) or "none"
            raise UserError(
                f"no {' or '.join(wanted)} in {path} (logged metrics: {known}); pass run folders "
                "written by `paravt train` and --metric names they logged"
            )
        series[Path(rd).name or str(rd)] = rows
    for key in wanted:
        if not any(key in r for rows in series.values() for r in rows):
            known = ", ".join(_numeric_keys([r for rows in series.values() for r in rows]))
            raise UserError(f"--metric {key}: no run logged it (logged metrics: {known})")
    return series


def _draw_panel(ax, key: str, title: str, series: dict[str, list]) -> None:
    """One metric over steps, one line per run."""
    for name, rows in series.items():
        pts = [(r["step"], r[key]) for r in rows if isinstance(r.get(key), (int, float))]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=name)
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)


def training_figure(
    run_dirs: list[str], metrics_file: str = "metrics.jsonl", metrics: list[str] | None = None
):
    """``(figure, info)``: one panel per metric (default: the paper's two), one line per run.

    The figure is returned open so a caller (or a test) can read its lines before saving.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(m, m) for m in metrics] if metrics else list(PANELS)
    wanted = [key for key, _ in panels]
    series = _read_runs(run_dirs, metrics_file, wanted)
    cols = min(len(panels), PANEL_COLUMNS)
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.6 * nrows), squeeze=False)
    flat = [ax for row in axes for ax in row]
    # the grid can have more axes than panels; the spare ones are hidden below
    for ax, (key, title) in zip(flat, panels, strict=False):
        _draw_panel(ax, key, title, series)
    for ax in flat[len(panels) :]:
        ax.set_visible(False)
    flat[0].legend()
    fig.tight_layout()
    return fig, {"metrics": wanted, "steps": {n: len(r) for n, r in series.items()}}


def plot_runs(
    run_dirs: list[str],
    out: str,
    metrics_file: str = "metrics.jsonl",
    metrics: list[str] | None = None,
) -> dict:
    """Draw ``training_figure`` and write it to ``out`` (PNG)."""
    import matplotlib.pyplot as plt

    fig, info = training_figure(run_dirs, metrics_file, metrics)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return {"out": str(out), **info}
