"""HTML of the site's pages: the index, one page per episode, and the runs compared.

The pages are Jinja2 templates (``templates/``, package data) rendered with autoescape on: every
value a template prints is HTML-escaped (``& < > " '``), after ``shown`` has made control
characters visible (``agent.safe_text.visible``). Values land only in element text or in quoted
attribute values; URLs (``href``, ``src``) are built here from our own file names, never from
a run's text, and the only script is ours (``assets/viewer.js``), so a ``<script>``, an
``onerror=`` or a ``javascript:`` link in a completion is shown as text. This module turns an
episode dict (``paravt.viewer.runs``) into the plain values the templates print.
"""

from __future__ import annotations

import json
import re
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from paravt.agent.safe_text import visible
from paravt.schema.questions import LETTERS

__all__ = ["index_page"]

STATUS_CLASS = {"ok": "ok", "error": "err", "ignored": "ign"}


def shown(value: Any) -> Any:
    """What a template prints for ``value``, before autoescape: nothing for ``None``, JSON for a
    list or a mapping, text with its control characters made visible; markup that a template
    built itself (a macro's output) passes as it is."""
    if value is None:
        return ""
    if isinstance(value, Markup):
        return value
    if isinstance(value, list | dict):
        value = json.dumps(value, ensure_ascii=False)
    return visible(str(value), keep_lines=True)


_ENV = Environment(
    loader=PackageLoader("paravt.viewer", "templates"),
    autoescape=True,
    finalize=shown,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


def _render(template: str, **values: Any) -> str:
    return _ENV.get_template(template).render(**values)


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


def _index_row(run, ep: dict, href: str, train: bool) -> dict:
    """One row of the index: its cells after the run and the id, and what the filters read."""
    correct = _correct_text(ep)
    steps = [ep.get("step"), ep.get("generation"), _num(ep.get("advantage"))] if train else []
    cells = [*steps, ep.get("question_type"), ep.get("k"), ep.get("calls"), ep.get("turns"),
             ep.get("answer"), _gold(ep), correct, _num(_reward_total(ep)), ep.get("error_kind")]  # fmt: skip
    return {
        "href": href,
        "run": run.name,
        "id": ep["id"],
        "cells": cells,
        "type": ep.get("question_type"),
        "correct": correct.split()[0] if correct else "",
        "error": ep.get("error_kind") or "",
    }


def index_page(runs: list, links: dict, notes: list[str], compare: bool) -> str:
    """The table of every episode of every run, filterable and sortable (``viewer.js``)."""
    # a training run's generations of one prompt share its id: its step, generation and
    # advantage tell them apart (columns shown when a training run is in the site)
    train = any(run.kind == "train" for run in runs)
    heads = ["run", "id", *(["step", "gen", "adv"] if train else []), "type", "K", "calls",
             "turns", "answer", "gold", "correct", "reward", "error"]  # fmt: skip
    rows = [
        _index_row(run, ep, links[(r_i, ep["_key"])], train)
        for r_i, run in enumerate(runs)
        for ep in run.episodes
    ]
    return _render(
        "index.html",
        title="paravt runs",
        up="",
        runs=runs,
        total=sum(len(r.episodes) for r in runs),
        notes=notes,
        compare=compare,
        heads=heads,
        rows=rows,
    )


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


def _frame(thumbs: dict, t: float) -> dict:
    """A frame for the ``frame`` macro: its stored thumbnail (None: missing) and its time."""
    return {"src": thumbs.get(f"{float(t):.3f}"), "label": f"{float(t):.1f} s"}


def _window_text(c: dict) -> str:
    if c.get("start") is not None and c.get("end") is not None:
        return f"{float(c['start']):.1f}–{float(c['end']):.1f} s"
    args = c.get("arguments") or {}
    start = shown(args.get("start_time", args.get("start", "?")))
    return f"asked {start}–{shown(args.get('end_time', args.get('end', '?')))}"


def _calls_by_turn(ep: dict) -> dict[int, list[dict]]:
    by_turn: dict[int, list[dict]] = {}
    for c in ep.get("call_list") or []:
        by_turn.setdefault(int(c.get("turn") or 0), []).append(c)
    return by_turn


def _timeline(ep: dict, thumbs: dict, duration: float) -> dict:
    """The overview frames on the video's time axis, and one lane of call windows a turn."""

    def pct(t: float) -> float:
        return max(0.0, min(100.0, 100.0 * float(t) / duration)) if duration else 0.0

    ticks = [
        {"left": f"{pct(t):.3f}", "frame": _frame(thumbs, t)}
        for t in ep.get("overview_times") or []
    ]
    lanes = []
    for turn, calls in sorted(_calls_by_turn(ep).items()):
        bars = []
        for c in calls:
            if c.get("start") is None or c.get("end") is None:
                continue
            left, right = pct(c["start"]), pct(c["end"])
            bars.append({"cls": STATUS_CLASS.get(str(c.get("status")), "ign"),
                         "index": int(c.get("index") or 0), "status": c.get("status"),
                         "left": f"{left:.3f}", "width": f"{max(right - left, 0.4):.3f}"})  # fmt: skip
        lanes.append({"turn": turn, "bars": bars})
    return {"ticks": ticks, "lanes": lanes}


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


def _call_view(c: dict, thumbs: dict) -> dict:
    """One call: its window, status, error or warnings, summary and (when it ran) its frames."""
    ran = c.get("status") == "ok"
    return {
        "cls": STATUS_CLASS.get(str(c.get("status")), "ign"),
        "index": int(c.get("index") or 0),
        "window": _window_text(c),
        "status": c.get("status"),
        "error": c.get("error"),
        "error_kind": c.get("error_kind"),
        "warnings": c.get("warnings") or [],
        "summary": c.get("summary"),
        "frames": [_frame(thumbs, t) for t in c.get("times") or []] if ran else None,
    }


def _turn_views(ep: dict, thumbs: dict) -> list[dict]:
    """Each turn's text (thinking folded) followed by the calls it made."""
    calls_of = _calls_by_turn(ep)
    views = []
    for n, turn in enumerate(ep.get("turn_list") or []):
        idx = int(turn.get("index", n))
        prefix = ep.get("prefix", "") if n == 0 else ""
        thinking, rest = _split_thinking(turn.get("text") or "", prefix)
        views.append({
            "index": idx,
            "label": "forced answer" if turn.get("forced") else f"turn {idx}",
            "thinking": thinking,
            "rest": rest,
            "calls": [_call_view(c, thumbs) for c in calls_of.get(idx, [])],
        })  # fmt: skip
    return views


_HOW = {
    "answer_tag": "read from the <answer> tag",
    "extracted": "extracted from the final text",
    "forced": "forced: the tool rounds ran out",
}


def _reward_values(ep: dict) -> dict:
    """The reward template's values: every term the run logged, in its order (the reward's own
    list, ``RewardBreakdown.TERMS``), the K gating chose and the advantage."""
    reward = ep.get("reward") or {}
    advantage = ep.get("advantage")
    return {
        "reward": [(name, _num(value, 3)) for name, value in reward.items()],
        "k": ep.get("k"),
        "advantage": None if advantage is None else _num(advantage, 3),
    }


def _reward_section(ep: dict) -> str:
    """A training episode's reward terms, the K gating chose and its advantage ('' elsewhere)."""
    return _render("reward.html", **_reward_values(ep))


def episode_page(run, ep: dict, thumbs: dict, index_href: str) -> str:
    """One episode: question, overview on the timeline, turns with their calls, answer, reward."""
    duration = _duration(ep)
    keys = ("id", "question_type", "k", "step", "generation", "question", "answer", "error",
            "error_kind")  # fmt: skip
    source = ep.get("answer_source") or ""
    return _render(
        "episode.html",
        title=f"{ep['id']} · {run.name}",
        up="../",
        index_href=index_href,
        run=run,
        ep={key: ep.get(key) for key in keys},
        video_name=str(ep.get("video") or "").rsplit("/", 1)[-1],
        duration=duration,
        options=[
            (LETTERS[i] if i < len(LETTERS) else i, o)
            for i, o in enumerate(ep.get("options") or [])
        ],
        gold=_gold(ep),
        overview=[_frame(thumbs, t) for t in ep.get("overview_times") or []],
        turns=_turn_views(ep, thumbs),
        how=_HOW.get(source, source),
        correct=_correct_text(ep),
        **_timeline(ep, thumbs, duration),
        **_reward_values(ep),
    )


def _compare_cell(ep: dict | None, href: str | None) -> dict | None:
    if ep is None:
        return None
    ok = _correct_text(ep)
    answer = ep.get("answer")
    return {
        "href": href,
        "answer": "(none)" if answer in (None, "") else answer,
        "mark": ok.split()[0] if ok else "na",
        "correct": ok,
    }


def compare_page(runs: list, links: dict) -> str:
    """The same question in every run that has it: each run's answer and whether it was right."""
    by_id: dict[str, dict[int, dict]] = {}
    for r_i, run in enumerate(runs):
        for ep in run.episodes:
            by_id.setdefault(ep["id"], {})[r_i] = ep
    rows = []
    for qid, eps in by_id.items():
        if len(eps) < 2:
            continue
        first = next(iter(eps.values()))
        cells = [
            _compare_cell(eps.get(r_i), links.get((r_i, eps[r_i]["_key"])) if r_i in eps else None)
            for r_i in range(len(runs))
        ]
        rows.append({"id": qid, "question": first.get("question"), "gold": _gold(first),
                     "runs": cells})  # fmt: skip
    return _render("compare.html", title="runs side by side", up="", runs=runs, rows=rows)
