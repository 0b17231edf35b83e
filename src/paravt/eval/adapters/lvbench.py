"""LVBench from its native JSON-lines annotations, in either of its two layouts.

Expected layout::

    --data DIR:    DIR/video_info.meta.jsonl   (or any *.jsonl in DIR)
    --videos DIR:  DIR/<key>.mp4

- **nested** (the release's ``video_info.meta.jsonl``): one line per video — ``key`` (the video
  id), ``type`` (video category) and ``qa``, a list of questions;
- **flat** (the copy other harnesses read, the ParaVT reference's among them): one line per
  question, with ``video_key`` naming the video.

A question has ``uid``, ``question`` (the options are embedded in the text, one per line, as
``(A) …``), ``answer`` (a letter), ``question_type`` (a list: a question may belong to several
task types, and counts in each) and ``time_reference``. The layout is chosen per file, from its
first row; a row that does not fit the file's layout is skipped and reported.
"""

from __future__ import annotations

import re
from pathlib import Path

from paravt.data.questions import resolve_video
from paravt.eval.adapters import register
from paravt.eval.adapters._files import find_file, in_file_order, read_jsonl
from paravt.eval.samples import LETTERS, EvalSample, LoadedSplit

__all__: list[str] = []  # nothing here is for the other rooms

LAYOUT = (
    "DIR/video_info.meta.jsonl (one video per line: key, qa) or a JSON-lines file of "
    "questions (video_key, uid, question, answer); videos as --videos/<key>.mp4"
)

_OPTION_LINE = re.compile(r"^\s*\(([A-J])\)\s*(.*)$")


def split_embedded_options(text: str) -> tuple[str, list[str]]:
    """``"Q?\\n(A) x\\n(B) y"`` → ``("Q?", ["x", "y"])``; options may also share one line."""
    lines = str(text).replace("\r\n", "\n").split("\n")
    stem, options = [], []
    for line in lines:
        m = _OPTION_LINE.match(line)
        if m:
            options.append(m.group(2).strip())
        elif options:
            options[-1] = (options[-1] + " " + line.strip()).strip()
        else:
            stem.append(line)
    if not options:  # all on one line: "Q? (A) x (B) y"
        parts = re.split(r"\s*\(([A-J])\)\s*", str(text))
        if len(parts) >= 3:
            return parts[0].strip(), [p.strip() for p in parts[2::2]]
    return "\n".join(stem).strip(), options


def _sample(qa: dict, key: str, ref_id: str, category: str, videos: Path) -> EvalSample:
    """One question of video ``key`` (``ref_id`` names it when the row has no ``uid``)."""
    stem, opts = split_embedded_options(qa["question"])
    gold = str(qa.get("answer") or "").strip().strip("()").upper()
    problem = None
    if not opts:
        problem = "no (A) … options found in the question"
    elif gold not in LETTERS[: len(opts)]:
        problem = f"gold answer {qa.get('answer')!r} is not one of the option letters"
    qtypes = qa.get("question_type") or ["unknown"]
    if isinstance(qtypes, str):
        qtypes = [qtypes]
    return EvalSample(
        id=str(qa.get("uid") or ref_id),
        split="lvbench",
        video=str(resolve_video(videos, key)),
        question=stem,
        question_type="mcq",
        options=opts,
        answer=gold or None,
        groups={"task": [str(t) for t in qtypes], "category": category},
        meta={"video_key": key, "time_reference": qa.get("time_reference")},
        problem=problem,
    )


def file_layout(rows: list[tuple[int, object]]) -> str:
    """``"nested"`` or ``"flat"``, from the first row that is a JSON object."""
    for _, row in rows:
        if isinstance(row, dict):
            return "flat" if "video_key" in row and "qa" not in row else "nested"
    return "nested"


@register("lvbench", aliases=(), layout=LAYOUT)
def load(data: Path, videos: Path) -> LoadedSplit:
    ann = find_file(data, ["video_info.meta.jsonl", "*.jsonl"], "LVBench", LAYOUT)
    skipped: list[tuple[str, str]] = []
    rows = read_jsonl(ann, skipped)  # a line that is not JSON: skipped, with its reason
    layout = file_layout(rows)
    samples = []
    for lineno, row in rows:
        ref = f"{ann.name}:{lineno}"
        if layout == "flat":
            if not isinstance(row, dict) or not row.get("video_key"):
                skipped.append((ref, "line has no video_key (the file is one question per line)"))
                continue
            if not row.get("question"):
                skipped.append((ref, "question missing"))
                continue
            key = str(row["video_key"])
            category = str(row.get("type") or "unknown")
            samples.append(_sample(row, key, f"{key}-{lineno}", category, videos))
            continue
        if not isinstance(row, dict) or not row.get("key"):
            skipped.append((ref, "line has no video key (the file is one video per line)"))
            continue
        key = str(row["key"])
        for j, qa in enumerate(row.get("qa") or []):
            if not isinstance(qa, dict) or not qa.get("question"):
                skipped.append((f"{ref} qa[{j}]", "question missing"))
                continue
            samples.append(
                _sample(qa, key, f"{key}-{j}", str(row.get("type") or "unknown"), videos)
            )
    return LoadedSplit("lvbench", samples, in_file_order(skipped), [str(ann)])
