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

from paravt.data.questions import resolve_video
from paravt.eval.adapters import register
from paravt.eval.adapters._files import find_file, normalise_text, read_rows
from paravt.eval.samples import EvalSample, LoadedSplit

__all__: list[str] = []  # nothing here is for the other rooms

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


def _choices(row: dict) -> dict[str, str]:
    """``letter -> text`` of a row's non-empty choices (a list is lettered from A)."""
    choices = row.get("choices") or {}
    if isinstance(choices, list):
        choices = {chr(65 + j): c for j, c in enumerate(choices)}
    if not isinstance(choices, dict):
        return {}
    return {
        str(k).strip().upper(): str(v).strip()
        for k, v in choices.items()
        if v is not None and str(v).strip()
    }


def _mcq_gold(choices: dict[str, str], answer: str) -> tuple[str | None, str | None]:
    """``(gold letter, problem)`` of a multiple-choice row: the answer is a letter, or the text
    of exactly one choice; the letters run from A without a gap."""
    keys = sorted(choices)
    if not keys:
        return None, "multiple-choice row has no non-empty choices"
    gold, problem = None, None
    if answer.upper() in keys:
        gold = answer.upper()
    else:
        hits = [k for k in keys if normalise_text(choices[k]) == normalise_text(answer)]
        if len(hits) == 1:
            gold = hits[0]
        else:
            problem = f"answer {answer!r} is neither a choice letter nor one choice's text"
    if keys != [chr(65 + j) for j in range(len(keys))]:
        problem = f"choice letters {keys} are not consecutive from A"
    return gold, problem


def _sample(row: dict, i: int, videos: Path) -> EvalSample:
    """One row as a sample (a row whose gold cannot be used keeps its ``problem``)."""
    choices = _choices(row)
    opts = [choices[k] for k in sorted(choices)]
    answer = str(row.get("answer") or "").strip()
    kind = str(row.get("question_type") or "").strip().lower()
    if kind not in _KINDS:
        kind = "multiple-choice" if opts else "open-ended"
    if _KINDS[kind] == "mcq":
        qtype, (gold, problem) = "mcq", _mcq_gold(choices, answer)
    else:
        qtype, gold, opts = "oe", answer, []
        problem = None if answer else "open-ended row has no reference answer"
    subject = (row.get("metadata") or {}).get("subject") or "unknown"
    return EvalSample(
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


@register("mmvu", aliases=("mmvu_val",), layout=LAYOUT)
def load(data: Path, videos: Path) -> LoadedSplit:
    ann = find_file(data, ["validation.json", "*.json"], "MMVU", LAYOUT)
    samples, skipped = [], []
    for i, row in enumerate(read_rows(ann)):
        if not isinstance(row, dict) or not row.get("question"):
            skipped.append((f"{ann.name}[{i}]", "row has no question"))
            continue
        samples.append(_sample(row, i, videos))
    return LoadedSplit("mmvu", samples, skipped, [str(ann)])
