"""Video-MME (without and with subtitles) from its native files.

Expected layout (``--data DIR``)::

    DIR/videomme/test-00000-of-00001.parquet   # the released parquet (or any *.parquet / *.json
                                               #  / *.jsonl directly in DIR or DIR/videomme)
    DIR/subtitle/<videoID>.srt                 # only for the with-subtitles split

``--videos DIR`` holds ``<videoID>.mp4`` (the ``data/`` folder of the release; other common
extensions are accepted).

Rows are flat (one question per row: ``video_id``, ``duration`` short/medium/long, ``domain``,
``sub_category``, ``videoID``, ``question_id``, ``task_type``, ``question``, ``options`` already
prefixed ``A. ``, ``answer`` a letter) or nested (one video per row with a ``questions`` list), as
in the JSON release. Videos without an ``.srt`` get no subtitle lines (Video-MME has some); that
is recorded, not an error.
"""

from __future__ import annotations

from pathlib import Path

from paravt.data.questions import resolve_video, strip_option_prefix
from paravt.eval.adapters import register
from paravt.eval.adapters._files import AnnotationError, find_file, read_rows
from paravt.eval.samples import LETTERS, EvalSample, LoadedSplit

__all__: list[str] = []  # nothing here is for the other rooms

LAYOUT = (
    "DIR/videomme/test-*.parquet (or *.parquet/*.json/*.jsonl in DIR), DIR/subtitle/<videoID>.srt"
)


def _flatten(rows: list[dict]) -> list[dict]:
    out = []
    for row in rows:
        if isinstance(row, dict) and isinstance(row.get("questions"), list):
            video_fields = {k: v for k, v in row.items() if k != "questions"}
            for q in row["questions"]:
                out.append({**video_fields, **(q if isinstance(q, dict) else {})})
        else:
            out.append(row)
    return out


def _sample(row: dict, i: int, vid: str, split: str, videos: Path, sub_dir: Path | None):
    """One question row as a sample; ``sub_dir`` (with subtitles only) is where its .srt is."""
    opts = [strip_option_prefix(str(o))[1] for o in list(row.get("options") or [])]
    gold = str(row.get("answer") or "").strip().upper()
    problem = None
    if not opts:
        problem = "row has no options"
    elif gold not in LETTERS[: len(opts)]:
        problem = f"gold answer {row.get('answer')!r} is not one of the option letters"
    meta = {"video_id": row.get("video_id"), "domain": row.get("domain")}
    if sub_dir is not None:
        srt = sub_dir / f"{vid}.srt"
        meta["subtitle_path"] = str(srt) if srt.is_file() else None
    return EvalSample(
        id=str(row.get("question_id") or f"{vid}-{i}"),
        split=split,
        video=str(resolve_video(videos, vid)),
        question=str(row["question"]).strip(),
        question_type="mcq",
        options=opts,
        answer=gold or None,
        groups={
            "duration": str(row.get("duration") or "unknown"),
            "task": str(row.get("task_type") or "unknown"),
        },
        meta=meta,
        problem=problem,
    )


@register("videomme", aliases=("video-mme", "videomme_wo_sub"), layout=LAYOUT)
def load(data: Path, videos: Path, *, subtitles: bool = False) -> LoadedSplit:
    split = "videomme_sub" if subtitles else "videomme"
    ann = find_file(
        data,
        ["videomme/*.parquet", "*.parquet", "videomme/*.json", "*.json", "*.jsonl"],
        "Video-MME",
        LAYOUT,
    )
    rows = _flatten(read_rows(ann))
    samples: list[EvalSample] = []
    skipped: list[tuple[str, str]] = []
    sub_dir = (Path(data) if Path(data).is_dir() else Path(data).parent) / "subtitle"
    if subtitles and not sub_dir.is_dir():
        raise AnnotationError(
            f"Video-MME with subtitles: folder not found: {sub_dir} (unpack the subtitle "
            f"archive there: one <videoID>.srt per video)"
        )
    for i, row in enumerate(rows):
        ref = f"{ann.name}[{i}]"
        if not isinstance(row, dict) or not row.get("question"):
            skipped.append((ref, "row has no question"))
            continue
        vid = str(row.get("videoID") or row.get("video_id") or "").strip()
        if not vid:
            skipped.append((ref, "row has no videoID"))
            continue
        samples.append(_sample(row, i, vid, split, videos, sub_dir if subtitles else None))
    return LoadedSplit(split, samples, skipped, [str(ann)])


@register(
    "videomme_sub",
    aliases=("video-mme-sub", "videomme-sub", "videomme_w_sub"),
    layout=LAYOUT + " (the subtitles are read)",
)
def load_with_subtitles(data: Path, videos: Path) -> LoadedSplit:
    """Video-MME with subtitles: the lines at the sampled frames join the question."""
    return load(data, videos, subtitles=True)
