"""LongVideoBench (validation) from its native ``lvb_val.json``.

Expected layout::

    --data DIR:    DIR/lvb_val.json
    --videos DIR:  DIR/<video_path>          (the release's ``videos/`` folder)

Each row: ``id``, ``video_id``, ``video_path``, ``question``, ``candidates`` (2 to 5 option
texts), ``correct_choice`` (0-based index), ``duration_group`` (15 / 60 / 600 / 3600 seconds),
``question_category`` and ``duration``. Subtitles are not interleaved (the frames-only setting).
"""

from __future__ import annotations

from pathlib import Path

from paravt.data.questions import clean_options, resolve_video
from paravt.eval.adapters import register
from paravt.eval.adapters._files import find_file, read_rows
from paravt.eval.samples import EvalSample, LoadedSplit, letter

__all__: list[str] = []  # nothing here is for the other rooms

LAYOUT = "DIR/lvb_val.json; videos in --videos as in the row's video_path"


@register("longvideobench", aliases=("lvb", "longvideobench_val"), layout=LAYOUT)
def load(data: Path, videos: Path) -> LoadedSplit:
    ann = find_file(data, ["lvb_val.json", "*val*.json"], "LongVideoBench", LAYOUT)
    rows = read_rows(ann)
    samples, skipped = [], []
    for i, row in enumerate(rows):
        ref = f"{ann.name}[{i}]"
        if not isinstance(row, dict) or not row.get("question"):
            skipped.append((ref, "row has no question"))
            continue
        vid = row.get("video_path") or row.get("video_id")
        if not vid:
            skipped.append((ref, "row has no video_path"))
            continue
        opts = clean_options(row.get("candidates") or [])
        problem = None
        gold = None
        choice = row.get("correct_choice")
        try:
            if choice is None:
                raise ValueError
            idx = int(choice)
            if not 0 <= idx < len(opts):
                raise ValueError
            gold = letter(idx)
        except (TypeError, ValueError):
            problem = f"correct_choice {choice!r} is not an index into {len(opts)} candidates"
        samples.append(
            EvalSample(
                id=str(row.get("id") or f"lvb-{i}"),
                split="longvideobench",
                video=str(resolve_video(videos, str(vid))),
                question=str(row["question"]).strip(),
                question_type="mcq",
                options=opts,
                answer=gold,
                groups={
                    "duration": str(row.get("duration_group", "unknown")),
                    "task": str(row.get("question_category") or "unknown"),
                },
                meta={"video_id": row.get("video_id"), "duration": row.get("duration")},
                problem=problem,
            )
        )
    return LoadedSplit("longvideobench", samples, skipped, [str(ann)])
