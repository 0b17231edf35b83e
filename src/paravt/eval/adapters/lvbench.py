"""LVBench from its native ``video_info.meta.jsonl``.

Expected layout::

    --data DIR:    DIR/video_info.meta.jsonl   (or any *.jsonl in DIR)
    --videos DIR:  DIR/<key>.mp4

One line per video: ``key`` (the video id), ``type`` (video category) and ``qa``, a list of
questions with ``uid``, ``question`` (the options are embedded in the text, one per line, as
``(A) …``), ``answer`` (a letter), ``question_type`` (a list: a question may belong to several
task types, and counts in each) and ``time_reference``.
"""

from __future__ import annotations

import re
from pathlib import Path

from paravt.eval.adapters._files import find_file, read_jsonl, resolve_video
from paravt.eval.samples import LETTERS, EvalSample, LoadedSplit

LAYOUT = "DIR/video_info.meta.jsonl; videos as --videos/<key>.mp4"

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


def load(data: Path, videos: Path) -> LoadedSplit:
    ann = find_file(data, ["video_info.meta.jsonl", "*.jsonl"], "LVBench", LAYOUT)
    samples, skipped = [], []
    for lineno, row in read_jsonl(ann):
        ref = f"{ann.name}:{lineno}"
        if not isinstance(row, dict) or not row.get("key"):
            skipped.append((ref, "line has no video key"))
            continue
        key = str(row["key"])
        for j, qa in enumerate(row.get("qa") or []):
            if not isinstance(qa, dict) or not qa.get("question"):
                skipped.append((f"{ref} qa[{j}]", "question missing"))
                continue
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
            samples.append(
                EvalSample(
                    id=str(qa.get("uid") or f"{key}-{j}"),
                    split="lvbench",
                    video=str(resolve_video(videos, key)),
                    question=stem,
                    question_type="mcq",
                    options=opts,
                    answer=gold or None,
                    groups={"task": [str(t) for t in qtypes], "category": str(row.get("type") or "unknown")},
                    meta={"video_key": key, "time_reference": qa.get("time_reference")},
                    problem=problem,
                )
            )
    return LoadedSplit("lvbench", samples, skipped, [str(ann)])
