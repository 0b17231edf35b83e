"""Evaluation results for people: the end-of-run tables (stdout) and the side-by-side report of
several runs as Markdown, LaTeX or CSV (``paravt eval report``)."""

from __future__ import annotations

import csv
import io

from paravt.eval.compare import COUNT_KEYS, Comparison

__all__ = ["REPORT_FORMATS", "format_comparison", "summary_table"]

REPORT_FORMATS = ("markdown", "latex", "csv")


def _pct(x: float) -> str:
    return f"{100.0 * float(x):.1f}"


def _metric_table(summary: dict):
    from rich.table import Table

    m = summary["metrics"]
    wall = (summary.get("timing") or {}).get("wall_s")
    caption = f"wall time {wall:.1f} s" if wall is not None else None
    table = Table(title=f"{summary['benchmark']} ({m['n']} samples)", caption=caption)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for variant, vals in m["variants"].items():
        marker = " *" if variant == summary.get("variant") else ""
        for key, val in vals.items():
            if key in ("headline", "value"):
                continue
            shown = str(val) if key in COUNT_KEYS else _pct(val)
            table.add_row(f"{variant}{marker}: {key}", shown)
    kinds = ", ".join(f"{k}: {v}" for k, v in m["error_kinds"].items()) or "-"
    table.add_row("errors", f"{m['errors']} ({kinds})")
    for key, label in (("skipped_rows", "skipped rows"), ("missing", "missing")):
        if summary.get(key):
            table.add_row(label, str(len(summary[key])))
    if summary.get("duplicates"):
        n = summary["duplicates"]
        table.add_row("duplicates", str(len(n) if isinstance(n, list) else n))
    return table


def denominator_line(metrics: dict) -> str:
    """Which questions the numbers count (``paravt.eval.metrics.denominators``)."""
    d = metrics["denominators"]
    parts = []
    if d.get("accuracy"):
        parts.append(
            f"accuracy over the {d['accuracy']} questions scored by correctness (errors count 0)"
        )
    if d.get("grounding"):
        parts.append(f"mIoU and R@t over the {d['grounding']} grounding questions")
    return "; ".join(parts)


def _tools_table(tools: dict):
    """Calls the model attempted (every parsed call) beside the calls that executed."""
    from rich.table import Table

    table = Table(title="tool calls")
    table.add_column("", justify="left")
    table.add_column("executed", justify="right")
    table.add_column("attempted", justify="right")
    attempted = "avg_attempted" in tools
    table.add_row(
        "calls per sample",
        f"{tools['avg_calls']:.2f}",
        f"{tools['avg_attempted']:.2f}" if attempted else "-",
    )
    table.add_row(
        "samples with a call (%)",
        _pct(tools["usage_rate"]),
        _pct(tools["attempt_rate"]) if attempted else "-",
    )
    if "avg_turns" in tools:
        table.add_row("model turns per sample", f"{tools['avg_turns']:.2f}", "")
    return table


def _breakdown_table(key: str, groups: dict):
    from rich.table import Table

    table = Table(title=f"accuracy by {key}")
    table.add_column(key)
    table.add_column("n", justify="right")
    table.add_column("accuracy", justify="right")
    grounding = any("miou" in g for g in groups.values())
    if grounding:
        table.add_column("grounding n", justify="right")
        table.add_column("mIoU", justify="right")
    for value, g in groups.items():
        acc = "-" if g["accuracy"] is None else _pct(g["accuracy"])
        row = [str(value), str(g["n"]), acc]
        if grounding:
            row += [str(g.get("grounding_n", 0)), _pct(g["miou"]) if "miou" in g else "-"]
        table.add_row(*row)
    return table


def summary_table(summary: dict):
    """The end-of-run report: every variant with errors and wall time, tool calls executed and
    attempted, then accuracy by each group key (duration, task type, ...)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    parts: list[Table | Text] = [_metric_table(summary)]
    if summary["metrics"].get("denominators"):
        parts.append(Text(denominator_line(summary["metrics"])))
    parts.append(_tools_table(summary["metrics"]["tools"]))
    for key, groups in (summary["metrics"].get("by_group") or {}).items():
        parts.append(_breakdown_table(key, groups))
    if summary.get("sheets"):
        folder = summary["sheets"][0].rsplit("/", 1)[0]
        parts.append(Text(f"{len(summary['sheets'])} episode sheets in {folder}"))
    return Group(*parts)


# -- several runs side by side --------------------------------------------------------------------
def _gain(g: float | None) -> str:
    return "-" if g is None else f"{100.0 * g:+.1f}%"


def _cells(cmp: Comparison) -> tuple[list[str], list[list[str]]]:
    head = ["run", *(f"{s} {m}" for s, m in cmp.columns), "avg"]
    if cmp.baseline is not None:
        head.append(f"gain vs {cmp.baseline}")
    body = []
    for r in cmp.rows:
        row = [
            r.name,
            *(_pct(r.values[c]) if c in r.values else "-" for c in cmp.columns),
            _pct(r.avg),
        ]
        if cmp.baseline is not None:
            row.append(_gain(r.gain))
        body.append(row)
    return head, body


def _markdown(cmp: Comparison) -> str:
    head, body = _cells(cmp)
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "_": r"\_",
    "#": r"\#",
    "$": r"\$",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def _latex_escape(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _latex(cmp: Comparison) -> str:
    head, body = _cells(cmp)
    out = [
        r"\begin{tabular}{l" + "r" * (len(head) - 1) + "}",
        r"\toprule",
        " & ".join(_latex_escape(h) for h in head) + r" \\",
        r"\midrule",
    ]
    out += [" & ".join(_latex_escape(c) for c in row) + r" \\" for row in body]
    out += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(out)


def _csv(cmp: Comparison) -> str:
    """Raw fractions (not percentages) for spreadsheets; ``gain`` is a fraction too."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["run", *(f"{s}/{m}" for s, m in cmp.columns), "avg", "gain", "wall_s"])
    for r in cmp.rows:
        w.writerow(
            [
                r.name,
                *(r.values.get(c, "") for c in cmp.columns),
                r.avg,
                "" if r.gain is None else r.gain,
                "" if r.wall_s is None else r.wall_s,
            ]
        )
    return buf.getvalue().rstrip("\n")


def format_comparison(cmp: Comparison, fmt: str = "markdown") -> str:
    """The comparison as text in ``fmt`` (markdown, latex or csv); percentages except in CSV."""
    return {"markdown": _markdown, "latex": _latex, "csv": _csv}[fmt](cmp)
