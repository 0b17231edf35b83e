"""The paper-style training-dynamics figure: format reward and tool-call rate κ over steps.

One line per run folder (its ``metrics.jsonl``), so ``paravt plot runs/paragrpo runs/vanilla_grpo``
shows the paper's contrast (vanilla GRPO: format ≈0.13, κ → 0; PARA-GRPO: format ≈0.64, κ ≈0.21).
"""

from __future__ import annotations

from pathlib import Path

from paravt.errors import UserError
from paravt.train.metrics import read_jsonl

PANELS = (("reward/fmt", "format reward R_fmt"), ("tools/kappa", "tool-call rate κ"))


def plot_runs(run_dirs: list[str], out: str, metrics_file: str = "metrics.jsonl") -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = {}
    for rd in run_dirs:
        path = Path(rd) / metrics_file
        rows = [r for r in read_jsonl(path) if "reward/fmt" in r or "tools/kappa" in r]
        if not rows:
            raise UserError(
                f"no training metrics in {path}: pass run folders written by `paravt train`"
            )
        series[Path(rd).name or str(rd)] = rows
    fig, axes = plt.subplots(1, len(PANELS), figsize=(5 * len(PANELS), 3.6))
    for ax, (key, title) in zip(axes, PANELS):
        for name, rows in series.items():
            pts = [(r["step"], r[key]) for r in rows if r.get(key) is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=name)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0].legend()
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return {"out": str(out), "steps": {n: len(r) for n, r in series.items()}}
