"""The human-readable summary table (stdout) for an evaluation summary dict."""

from __future__ import annotations

# variant entries that are counts, not fractions
_COUNTS = ("n_counted",)


def _pct(x: float) -> str:
    return f"{100.0 * float(x):.1f}"


def summary_table(summary: dict):
    """A rich Table: every variant, errors, tool use, then per-group accuracy."""
    from rich.table import Table

    m = summary["metrics"]
    table = Table(title=f"{summary['benchmark']} ({m['n']} samples)", show_lines=False)
    table.add_column("metric")
    table.add_column("value", justify="right")
    for variant, vals in m["variants"].items():
        marker = " *" if variant == summary.get("variant") else ""
        for key, val in vals.items():
            if key in ("headline", "value"):
                continue
            shown = str(val) if key in _COUNTS else _pct(val)
            table.add_row(f"{variant}{marker}: {key}", shown)
    table.add_row("errors", f"{m['errors']} ({', '.join(f'{k}: {v}' for k, v in m['error_kinds'].items()) or '-'})")
    tools = m["tools"]
    table.add_row("avg tool calls (executed)", f"{tools['avg_calls']:.2f}")
    table.add_row("tool usage rate (executed)", _pct(tools["usage_rate"]))
    if "avg_attempted" in tools:
        table.add_row("avg tool calls (attempted)", f"{tools['avg_attempted']:.2f}")
        table.add_row("tool usage rate (attempted)", _pct(tools["attempt_rate"]))
    for key, groups in (m.get("by_group") or {}).items():
        for value, g in groups.items():
            table.add_row(f"{key} = {value}", f"{_pct(g['accuracy'])}  (n={g['n']})")
    if summary.get("skipped_rows"):
        table.add_row("skipped rows", str(len(summary["skipped_rows"])))
    if summary.get("missing"):
        table.add_row("missing", str(len(summary["missing"])))
    if summary.get("duplicates"):
        n = summary["duplicates"]
        table.add_row("duplicates", str(len(n) if isinstance(n, list) else n))
    return table
