"""Reading a temporal-grounding answer: the one span it commits to, and the two overlap measures.

Spans accept ``s - e``, ``s to e``, ``between s and e``, ``[s, e]``, ``m:ss``/``h:mm:ss`` and
numbers with units in several notations (docs/ANSWERS.md, "Reading a span"):

- units: ``12.5s``, ``2 minutes``, ``1 h``, milliseconds (``3000 ms``, ``3000msec``) and the
  Chinese, Japanese and Korean units (``秒``, ``毫秒``, ``分钟``, ``小时``, ``초``, ``분``);
- joiners: dashes, ``~``/``〜``, ``to``/``until``/``and``, arrows (``-->``, ``→``), ``到``,
  ``至``, ``から``, ``부터``: ``3秒到7秒``, ``3초부터 7초까지``;
- subtitle timestamps: ``00:00:03,000 --> 00:00:07,000`` (SRT's comma before the milliseconds).

The answer is read after :func:`paravt.rewards.normalise.reading_text` (fullwidth digits and
``～`` become ASCII). A reversed pair is swapped; failing any span form, two times labelled as
start and end (``starts at 6.6 and ends at 15.2``). The one-candidate rule
(``paravt.rewards.candidates``) reads every span written: the same span twice is one, a
rejected one is dropped, two different ones are no answer.

Two overlap measures are exported under their own names: ``temporal_iou`` (intersection over
union, the training reward) and ``temporal_iou_hull`` (intersection over the hull of both spans,
the Charades-STA evaluation rule of docs/PROTOCOL.md §6). For two intervals that overlap, union and
hull are the same length, and disjoint intervals score 0 under both, so the two agree on every
proper pair of spans; the tests check that, and the second name exists so evaluation code says which
rule it means.
"""

from __future__ import annotations

import math
import re
from typing import Any

from paravt.rewards.candidates import Mention, committed

__all__ = ["proper_span", "span_from_text", "temporal_iou", "temporal_iou_hull"]

# A time: h:mm:ss / m:ss with a fraction (a dot, or SRT's comma before three digits: taken whole,
# never split into a comma pair), a decimal, an integer
_TIME = r"\d+(?::\d{1,2}){1,2}(?:\.\d+|,\d{3}(?!\d))?+|\d*\.\d+|\d+"
_LATIN_UNIT = r"ms|msecs?|milliseconds?|hours?|hrs?|h|minutes?|mins?|m|seconds?|secs?|s"
_CJK_UNIT = r"毫秒|秒钟|秒|分钟|分|小时|小時|時間|时|時|초|분|시간"
_UNIT = rf"(?:\s*((?:{_LATIN_UNIT})(?![A-Za-z])|{_CJK_UNIT}))?"
# ASCII word characters only around a time ("答案是3-9秒" holds the span 3-9), and no digit
# behind a colon before it or after one after it (never inside "1:05"; "答案:3-7" is a span)
_T1 = rf"(?<![A-Za-z0-9_.])(?<!\d:)({_TIME}){_UNIT}"
_T2 = rf"({_TIME}){_UNIT}(?![A-Za-z0-9_])(?!:\d)"
_JOINER = r"-->|->|→|⟶|-|–|—|~|〜|\bto\b|\buntil\b|\btill\b|\band\b|到|至|から|부터|에서"
_STRONG = re.compile(rf"{_T1}\s*(?:{_JOINER})\s*{_T2}", re.I)
_BRACKETED = re.compile(rf"[\(\[]\s*{_T1}\s*,\s*{_T2}\s*[\)\]]", re.I)
_COMMA = re.compile(rf"{_T1}\s*,\s*{_T2}", re.I)
_ANY_TIME = re.compile(rf"{_T1}", re.I)
_MILLISECONDS = frozenset({"ms", "msec", "msecs", "millisecond", "milliseconds", "毫秒"})
_HOURS = frozenset({"小时", "小時", "時間", "时", "時", "시간"})
_MINUTES = frozenset({"分钟", "分", "분"})
# Two lone times make a span only when the text labels the first a start and the second an end
# ("starts at 6.6 and ends at 15.2", "Start time: 6.60s\nEnd time: 15.21s", {"start": 3, ...}).
_START_LABEL = re.compile(
    r"(?:(?i:\b(?:start\w*|begin\w*|from|since)\b)|开始|起|从)\W{0,3}(?:\w+\W{1,3})?$"
)
_END_LABEL = re.compile(
    r"(?:(?i:\b(?:end\w*|until|till|to|finish\w*|stop\w*)\b)|结束|止|到)\W{0,3}(?:\w+\W{1,3})?$"
)


def _unit_seconds(unit: str) -> float:
    """Seconds in one ``unit`` (milliseconds before minutes: both start with m)."""
    u = unit.lower()
    if u in _MILLISECONDS:
        return 0.001
    if u in _HOURS or u.startswith("h"):
        return 3600.0
    if u in _MINUTES or u.startswith("m"):
        return 60.0
    return 1.0


def _seconds(token: str, unit: str | None) -> float:
    if ":" in token:
        value = 0.0
        for part in token.replace(",", ".").split(":"):
            value = value * 60.0 + float(part)
        return value
    return float(token) * (_unit_seconds(unit) if unit else 1.0)


def _pair(t1: str, u1: str | None, t2: str, u2: str | None) -> tuple[float, float] | None:
    if u1 and not u2:
        u2 = u1
    elif u2 and not u1:
        u1 = u2
    try:
        s, e = _seconds(t1, u1), _seconds(t2, u2)
    except (ValueError, OverflowError):
        return None
    if not (math.isfinite(s) and math.isfinite(e)):
        return None
    return (s, e) if s <= e else (e, s)


def _span_mentions(s: str) -> list[Mention]:
    """Every span written in ``s``, in text order, keyed by its ``(start, end)`` seconds (an
    unreadable one by its characters). A dash/"to" span wins over a comma pair that overlaps it
    (``At 1, 12 to 20``)."""
    taken: list[Mention] = []
    covered = bytearray(len(s))
    for pattern in (_STRONG, _BRACKETED, _COMMA):
        for m in pattern.finditer(s):
            a, b = m.span()
            if not any(covered[a:b]):
                taken.append(Mention(a, b, _pair(*m.groups()) or ("unreadable", a)))
        for t in taken:
            covered[t.start : t.end] = b"\x01" * (t.end - t.start)
    return sorted(taken, key=lambda t: t.start)


def _two_times(s: str) -> tuple[float, float] | None:
    """Exactly two times, the first labelled as a start and the second as an end. Two bare
    numbers are not a span (``Video 3 shows it 12 times``), nor two times offered side by side
    (``at 5 s or at 10 s``)."""
    times = list(_ANY_TIME.finditer(s))
    if len(times) != 2:
        return None
    first, second = times
    if not _START_LABEL.search(s[max(0, first.start() - 40) : first.start()]):
        return None
    if not _END_LABEL.search(s[max(first.end(), second.start() - 40) : second.start()]):
        return None
    return _pair(*first.groups(), *second.groups())


def span_from_text(s: str, words: str | None = None) -> tuple[float, float] | None:
    """The one span the normalised answer text ``s`` commits to, or ``None``: every span written
    is a candidate (``paravt.rewards.candidates``, rejections matched in ``words``, the same
    text before look-alike letters were read as Latin); failing any span form, two times
    labelled as start and end."""
    spans = _span_mentions(s)
    if not spans:
        return _two_times(s)
    key = committed(s if words is None else words, spans)
    return key if isinstance(key, tuple) and len(key) == 2 and key[0] != "unreadable" else None


def proper_span(span: Any) -> tuple[float, float] | None:
    """A ``(start, end)`` pair of finite numbers, start ≤ end (a reversed pair swapped)."""
    try:
        s, e = float(span[0]), float(span[1])
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    if not (math.isfinite(s) and math.isfinite(e)):
        return None
    return (s, e) if s <= e else (e, s)


def temporal_iou(pred: Any, gold: Any) -> float:
    """|pred ∩ gold| / |pred ∪ gold| in [0, 1] (training reward); reversed spans are swapped."""
    p, g = proper_span(pred), proper_span(gold)
    if p is None or g is None:
        return 0.0
    inter = max(0.0, min(p[1], g[1]) - max(p[0], g[0]))
    union = (p[1] - p[0]) + (g[1] - g[0]) - inter
    if union <= 0.0:
        return 1.0 if p == g else 0.0
    return min(1.0, max(0.0, inter / union))


def temporal_iou_hull(pred: Any, gold: Any) -> float:
    """|pred ∩ gold| / |hull(pred, gold)| in [0, 1] (Charades-STA, docs/PROTOCOL.md §6)."""
    p, g = proper_span(pred), proper_span(gold)
    if p is None or g is None:
        return 0.0
    inter = max(0.0, min(p[1], g[1]) - max(p[0], g[0]))
    hull = max(p[1], g[1]) - min(p[0], g[0])
    if hull <= 0.0:
        return 1.0 if p == g else 0.0
    return min(1.0, max(0.0, inter / hull))
