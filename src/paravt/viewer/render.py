"""HTML of the site's pages: the index, one page per episode, and the runs compared.

Every string that comes from a model, a dataset or a file name goes through ``esc``: HTML-escaped
(``& < > " '``) with control characters made visible (``agent.safe_text.visible``), and it only
ever lands in element text or a quoted ``title``/``data-*`` value. URLs (``href``, ``src``) are
built from our own file names, never from such a string, and the only script is ours
(``assets/viewer.js``), so a ``<script>``, an ``onerror=`` or a ``javascript:`` link in a
completion is shown as text.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from paravt.agent.safe_text import visible
from paravt.rewards.answers import LETTERS

STATUS_CLASS = {"ok": "ok", "error": "err", "ignored": "ign"}


def esc(value: Any) -> str:
    """``value`` as text safe inside an element or a quoted attribute (see module docstring)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        value = (
            json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else str(value)
        )
    return html.escape(visible(value, keep_lines=True), quote=True)


def page(title: str, body: str, depth: int = 0) -> str:
    up = "../" * depth
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title>"
        f'<link rel="stylesheet" href="{up}assets/viewer.css"></head>'
        f'<body>{body}<script src="{up}assets/viewer.js"></script></body></html>\n'
    )


def _num(x: Any, digits: int = 2) -> str:
    return "" if x is None else f"{float(x):.{digits}f}"


def _correct_text(ep: dict) -> str:
    c = ep.get("correct")
    if c is None:
        return ""
    if ep.get("question_type") == "tvg":
        return f"IoU {float(c):.2f}"
    return "yes" if float(c) >= 0.5 else "no"


def _gold(ep: dict) -> Any:
    """The gold answer; an mcq letter with its option's text beside it (``B (red)``)."""
    gold, options = ep.get("gold"), ep.get("options") or []
    if ep.get("question_type") == "mcq" and isinstance(gold, str) and gold in LETTERS:
        i = LETTERS.index(gold)
        if i < len(options):
            return f"{gold} ({options[i]})"
    return gold


def _reward_total(ep: dict) -> float | None:
    r = ep.get("reward")
    return None if not r else r.get("total")


def index_page(runs: list, links: dict, notes: list[str], compare: bool) -> str:
    """The table of every episode of every run, filterable and sortable (``viewer.js``)."""
    # a training run's generations of one prompt share its id: its step, generation and
    # advantage tell them apart (columns shown when a training run is in the site)
    train = any(run.kind == "train" for run in runs)
    heads = ["run", "id", *(["step", "gen", "adv"] if train else []), "type", "K", "calls",
             "turns", "answer", "gold", "correct", "reward", "error"]  # fmt: skip
    rows = []
    for r_i, run in enumerate(runs):
        for ep in run.episodes:
            href = links[(r_i, ep["_key"])]
            correct = _correct_text(ep)
            steps = [ep.get("step"), ep.get("generation"), _num(ep.get("advantage"))]
            cells = [
                esc(run.name),
                f'<a href="{href}">{esc(ep["id"])}</a>',
                *([esc("" if v is None else v) for v in steps] if train else []),
                esc(ep.get("question_type")),
                esc(ep.get("k")),
                esc(ep.get("calls")),
                esc(ep.get("turns")),
                esc(ep.get("answer")),
                esc(_gold(ep)),
                esc(correct),
                esc(_num(_reward_total(ep))),
                esc(ep.get("error_kind")),
            ]
            attrs = (
                f'data-href="{href}" data-run="{esc(run.name)}" '
                f'data-type="{esc(ep.get("question_type"))}" '
                f'data-correct="{esc(correct.split()[0] if correct else "")}" '
                f'data-error="{esc(ep.get("error_kind") or "")}"'
            )
            rows.append(f"<tr {attrs}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    run_opts = "".join(f'<option value="{esc(r.name)}">{esc(r.name)}</option>' for r in runs)
    note_html = "".join(f"<li>{esc(n)}</li>" for n in notes)
    compare_link = '<a href="compare.html">compare the runs side by side</a>' if compare else ""
    total = sum(len(r.episodes) for r in runs)
    body = (
        f'<h1>paravt runs</h1><p class="meta">{total} episodes in {len(runs)} run(s): '
        + ", ".join(f"{esc(r.name)} ({esc(r.kind)}, {len(r.episodes)})" for r in runs)
        + f" {compare_link}</p>"
        + (f'<ul class="notes" id="notes">{note_html}</ul>' if notes else "")
        + '<div class="filters">'
        '<input id="f-text" type="search" placeholder="filter: id, answer, any text">'
        f'<select id="f-run"><option value="">every run</option>{run_opts}</select>'
        '<select id="f-type"><option value="">every type</option><option value="mcq">mcq</option>'
        '<option value="tvg">tvg</option><option value="oe">oe</option></select>'
        '<select id="f-correct"><option value="">correct or not</option>'
        '<option value="yes">correct</option><option value="no">wrong</option></select>'
        '<select id="f-error"><option value="">errors or not</option>'
        '<option value="any">with an error</option><option value="none">without</option></select>'
        '<span id="shown"></span></div>'
        '<table id="episodes"><thead><tr>'
        + "".join(f'<th data-col="{i}">{h}</th>' for i, h in enumerate(heads))
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )
    return page("paravt runs", body)


def _split_thinking(text: str, prefix: str) -> tuple[str, str]:
    """(thinking, the rest) of one turn: what precedes ``</think>`` (the pre-filled prefix
    included), or all of it when a ``<think>`` is never closed."""
    full = (prefix or "") + (text or "")
    m = re.search(r"</think>", full)
    if m:
        return full[: m.start()].replace("<think>", "", 1).strip(), full[m.end() :].strip()
    if "<think>" in full:
        return full.replace("<think>", "", 1).strip(), ""
    return "", (text or "").strip()


def _frame(thumbs: dict, t: float, cls: str = "") -> str:
    src = thumbs.get(f"{float(t):.3f}")
    label = f"{float(t):.1f} s"
    if src is None:
        return f'<figure class="frame {cls}"><div class="missing">frame missing</div><figcaption>{label}</figcaption></figure>'
    return f'<figure class="frame {cls}"><img src="../{src}" alt="frame at {label}"><figcaption>{label}</figcaption></figure>'


def _window_text(c: dict) -> str:
    if c.get("start") is not None and c.get("end") is not None:
        return f"{float(c['start']):.1f}–{float(c['end']):.1f} s"
    args = c.get("arguments") or {}
    return (
        "asked "
        + esc(args.get("start_time", args.get("start", "?")))
        + "–"
        + esc(args.get("end_time", args.get("end", "?")))
    )


def _timeline(ep: dict, thumbs: dict, duration: float) -> str:
    def pct(t: float) -> float:
        return max(0.0, min(100.0, 100.0 * float(t) / duration)) if duration else 0.0

    ticks = "".join(
        f'<div class="tick" style="left:{pct(t):.3f}%">{_frame(thumbs, t, "mini")}</div>'
        for t in ep.get("overview_times") or []
    )
    lanes = []
    by_turn: dict[int, list[dict]] = {}
    for c in ep.get("call_list") or []:
        by_turn.setdefault(int(c.get("turn") or 0), []).append(c)
    for turn, calls in sorted(by_turn.items()):
        bars = []
        for c in calls:
            if c.get("start") is None or c.get("end") is None:
                continue
            left, right = pct(c["start"]), pct(c["end"])
            cls = STATUS_CLASS.get(str(c.get("status")), "ign")
            bars.append(
                f'<a class="bar {cls}" href="#call-{turn}-{int(c.get("index") or 0)}" '
                f'style="left:{left:.3f}%;width:{max(right - left, 0.4):.3f}%" '
                f'title="call {int(c.get("index") or 0)}: {esc(c.get("status"))}"></a>'
            )
        lanes.append(
            f'<div class="lane"><span class="lane-label">turn {turn}</span>{"".join(bars)}</div>'
        )
    axis = f'<div class="axis"><span>0 s</span><span>{duration:.1f} s</span></div>'
    return f'<section class="timeline"><div class="ticks">{ticks}</div>{"".join(lanes)}{axis}</section>'


def _duration(ep: dict) -> float:
    """The video's length, or the latest time the episode names where the record has none."""
    times = [float(t) for t in ep.get("overview_times") or []]
    times += [
        float(t)
        for c in ep.get("call_list") or []
        for t in (c.get("end"), c.get("start"))
        if t is not None
    ]
    return float(ep.get("duration") or (max(times) if times else 0.0) or 1.0)


def _episode_head(run, ep: dict, duration: float, index_href: str) -> str:
    """The link back, the episode's id and metadata, and the question with its options."""
    opts = "".join(
        f"<li><b>{LETTERS[i] if i < len(LETTERS) else i}.</b> {esc(o)}</li>"
        for i, o in enumerate(ep.get("options") or [])
    )
    return (
        f'<p class="nav"><a href="{index_href}">← all episodes</a></p>'
        f"<h1>{esc(ep['id'])}</h1>"
        f'<p class="meta">run {esc(run.name)} ({esc(run.kind)}) · {esc(ep.get("question_type"))} · '
        f"K = {esc(ep.get('k'))} · video {esc(str(ep.get('video') or '').rsplit('/', 1)[-1])} "
        f"({duration:.1f} s)"
        + (f" · step {esc(ep.get('step'))}" if ep.get("step") is not None else "")
        + (f" · generation {esc(ep.get('generation'))}" if ep.get("generation") is not None else "")
        + "</p>"
        f'<section class="question"><h2>Question</h2><p class="q">{esc(ep.get("question"))}</p>'
        + (f'<ol class="options">{opts}</ol>' if opts else "")
        + f'<p>gold: <span class="gold">{esc(_gold(ep))}</span></p></section>'
    )


def _call_block(c: dict, turn: int, thumbs: dict) -> list[str]:
    """One call: its window, status, error or warnings, summary and (when it ran) its frames."""
    cls = STATUS_CLASS.get(str(c.get("status")), "ign")
    ci = int(c.get("index") or 0)
    parts = [
        f'<div class="call {cls}" id="call-{turn}-{ci}"><h3>call {ci} · {_window_text(c)} · '
        f'<span class="status">{esc(c.get("status"))}</span></h3>'
    ]
    if c.get("error"):
        parts.append(
            f'<p class="error">{esc(c.get("error_kind") or "error")}: {esc(c["error"])}</p>'
        )
    parts += [f'<p class="warn">{esc(w)}</p>' for w in c.get("warnings") or []]
    if c.get("summary"):
        parts.append(f'<p class="summary">{esc(c["summary"])}</p>')
    if c.get("status") == "ok":
        parts.append('<div class="frames">')
        parts += [_frame(thumbs, t) for t in c.get("times") or []]
        parts.append("</div>")
    parts.append("</div>")
    return parts


def _turn_sections(ep: dict, thumbs: dict) -> list[str]:
    """Each turn's text (thinking folded) followed by the calls it made."""
    calls_of: dict[int, list[dict]] = {}
    for c in ep.get("call_list") or []:
        calls_of.setdefault(int(c.get("turn") or 0), []).append(c)
    parts: list[str] = []
    for n, turn in enumerate(ep.get("turn_list") or []):
        idx = int(turn.get("index", n))
        thinking, rest = _split_thinking(
            turn.get("text") or "", ep.get("prefix", "") if n == 0 else ""
        )
        label = "forced answer" if turn.get("forced") else f"turn {idx}"
        parts.append(f'<section class="turn"><h2>{label}</h2>')
        if thinking:
            parts.append(
                f"<details><summary>thinking</summary><pre>{esc(thinking)}</pre></details>"
            )
        if rest:
            parts.append(f'<pre class="text">{esc(rest)}</pre>')
        for c in calls_of.get(idx, []):
            parts += _call_block(c, idx, thumbs)
        parts.append("</section>")
    return parts


def _answer_section(ep: dict) -> str:
    """The answer, how it was read, the gold and whether it was right, and the episode's error."""
    how = {"answer_tag": "read from the <answer> tag", "extracted": "extracted from the final text",
           "forced": "forced: the tool rounds ran out"}.get(ep.get("answer_source") or "", ep.get("answer_source") or "")  # fmt: skip
    error = (
        f'<p class="error">{esc(ep.get("error_kind"))}: {esc(ep["error"])}</p>'
        if ep.get("error")
        else ""
    )
    return (
        '<section class="answer"><h2>Answer</h2>'
        f'<p>answer: <span class="ans">{esc(ep.get("answer"))}</span> ({esc(how)})</p>'
        f"<p>gold: {esc(_gold(ep))} · correct: {esc(_correct_text(ep))}</p>{error}</section>"
    )


def _reward_section(ep: dict) -> str:
    """A training episode's reward terms, the K gating chose and its advantage ('' elsewhere)."""
    if not ep.get("reward"):
        return ""
    r = ep["reward"]
    # every term the run logged, in its order (the reward's own list: RewardBreakdown.TERMS)
    rows = "".join(f"<tr><td>{esc(k)}</td><td>{_num(v, 3)}</td></tr>" for k, v in r.items())
    advantage = (
        f" · advantage {_num(ep.get('advantage'), 3)}" if ep.get("advantage") is not None else ""
    )
    return (
        '<section class="reward"><h2>Reward</h2><table class="terms">'
        f"{rows}</table><p>K chosen by gating: {esc(ep.get('k'))}{advantage}</p></section>"
    )


def episode_page(run, ep: dict, thumbs: dict, index_href: str) -> str:
    """One episode: question, overview on the timeline, turns with their calls, answer, reward."""
    duration = _duration(ep)
    parts = [_episode_head(run, ep, duration, index_href), "<h2>Where it looked</h2>"]
    parts.append(_timeline(ep, thumbs, duration))
    parts.append('<h2>Overview frames</h2><div class="frames">')
    parts += [_frame(thumbs, t) for t in ep.get("overview_times") or []]
    parts.append("</div>")
    parts += _turn_sections(ep, thumbs)
    parts.append(_answer_section(ep))
    parts.append(_reward_section(ep))
    return page(f"{ep['id']} · {run.name}", "".join(parts), depth=1)


def compare_page(runs: list, links: dict) -> str:
    """The same question in every run that has it: each run's answer and whether it was right."""
    by_id: dict[str, dict[int, dict]] = {}
    for r_i, run in enumerate(runs):
        for ep in run.episodes:
            by_id.setdefault(ep["id"], {})[r_i] = ep
    head = "<th>id</th><th>question</th><th>gold</th>" + "".join(
        f"<th>{esc(r.name)}</th>" for r in runs
    )
    rows = []
    for qid, eps in by_id.items():
        if len(eps) < 2:
            continue
        first = next(iter(eps.values()))
        cells = [esc(qid), esc(first.get("question")), esc(_gold(first))]
        for r_i in range(len(runs)):
            ep = eps.get(r_i)
            if ep is None:
                cells.append("")
                continue
            ok = _correct_text(ep)
            cells.append(
                f'<a href="{links[(r_i, ep["_key"])]}">{esc(ep.get("answer")) or "(none)"}</a>'
                f' <span class="c-{esc(ok.split()[0] if ok else "na")}">{esc(ok)}</span>'
            )
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    body = (
        '<p class="nav"><a href="index.html">← all episodes</a></p><h1>Runs side by side</h1>'
        f'<p class="meta">{len(rows)} questions answered in at least two runs</p>'
        f'<table id="compare"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )
    return page("runs side by side", body)
