"""MMVU (validation) from its native ``validation.json``.

Expected layout::

    --data DIR:    DIR/validation.json
    --videos DIR:  DIR/<subject>/<n>.mp4      (the release's ``videos/`` folder; the row's
                                               ``video`` URL is mapped to the part after
                                               ``/videos/``)

Each row: ``id``, ``video`` (a URL or a relative path), ``question``, ``choices`` (a mapping
``{"A": text, …}``), ``answer`` (the letter, or the option text, for multiple choice; the reference
answer for open-ended), ``question_type`` (``multiple-choice`` / ``open-ended``) and
``metadata.subject``. The release gives open-ended rows the same five keys with empty texts
(``{"A": "", …, "E": ""}``), so the kind is read from ``question_type`` and empty choices are
dropped; a row without a ``question_type`` is multiple choice when a non-empty choice remains.
Open-ended answers are scored by the rule-based matcher or, when configured, a judge model
(``paravt.eval.judge``).
"""

from __future__ import annotations

from pathlib import Path

from paravt.eval.adapters._files import find_file, normalise_text, read_rows, resolve_video
from paravt.eval.samples import EvalSample, LoadedSplit

LAYOUT = "DIR/validation.json; videos under --videos/<subject>/<n>.mp4"

# the release's question_type values → paravt's question types
_KINDS = {"multiple-choice": "mcq", "open-ended": "oe"}


def video_relpath(video: str) -> str:
    """``https://…/videos/Art/0.mp4`` → ``Art/0.mp4``; relative paths pass through."""
    video = str(video)
    if "/videos/" in video:
        return video.split("/videos/", 1)[1]
    if "://" in video:
        return video.rsplit("/", 1)[-1]
    return video


def load(data: Path, videos: Path) -> LoadedSplit:
    ann = find_file(data, ["validation.json", "*.json"], "MMVU", LAYOUT)
    samples, skipped = [], []
    for i, row in enumerate(read_rows(ann)):
        ref = f"{ann.name}[{i}]"
        if not isinstance(row, dict) or not row.get("question"):
            skipped.append((ref, "row has no question"))
            continue
        choices = row.get("choices") or {}
        if isinstance(choices, list):
            choices = {chr(65 + j): c for j, c in enumerate(choices)}
        if not isinstance(choices, dict):
            choices = {}
        choices = {
            str(k).strip().upper(): str(v).strip()
            for k, v in choices.items()
            if v is not None and str(v).strip()
        }
        keys = sorted(choices)
        opts = [choices[k] for k in keys]
        answer = str(row.get("answer") or "").strip()
        subject = (row.get("metadata") or {}).get("subject") or "unknown"
        kind = str(row.get("question_type") or "").strip().lower()
        if kind not in _KINDS:
            kind = "multiple-choice" if opts else "open-ended"
        problem = None
        if _KINDS[kind] == "mcq":
            qtype, gold = "mcq", None
            if not opts:
                problem = "multiple-choice row has no non-empty choices"
            elif answer.upper() in keys:
                gold = answer.upper()
            else:
                hits = [
                    k
                    for k, o in zip(keys, opts, strict=True)
                    if normalise_text(o) == normalise_text(answer)
                ]
                if len(hits) == 1:
                    gold = hits[0]
                else:
                    problem = f"answer {answer!r} is neither a choice letter nor one choice's text"
            if opts and keys != [chr(65 + j) for j in range(len(keys))]:
                problem = f"choice letters {keys} are not consecutive from A"
        else:
            qtype, gold, opts = "oe", answer, []
            if not answer:
                problem = "open-ended row has no reference answer"
        samples.append(
            EvalSample(
                id=str(row.get("id") or f"mmvu-{i}"),
                split="mmvu",
                video=str(resolve_video(videos, video_relpath(row.get("video", "")))),
                question=str(row["question"]).strip(),
                question_type=qtype,
                options=opts,
                answer=gold,
                groups={"subject": str(subject), "format": kind},
                meta={"video_url": row.get("video")},
                problem=problem,
            )
        )
    return LoadedSplit("mmvu", samples, skipped, [str(ann)])
