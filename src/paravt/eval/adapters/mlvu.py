"""MLVU dev (multiple-choice tasks) from its native per-task JSON files.

Expected layout::

    --data DIR:    DIR/json/<n>_<task>.json    (e.g. 1_plotQA.json; or the files directly in DIR)
    --videos DIR:  DIR/<n>_<task>/<video>     (the release's ``video/`` folder; a flat folder
                                               of videos is accepted too)

Each task file is a list of rows: ``video`` (file name), ``duration``, ``question``,
``candidates`` (option texts), ``answer`` (the option **text**, not a letter) and
``question_type`` (the task). The gold letter is found by matching the answer text against the
candidates (exact, then case/whitespace-insensitive); an answer matching no candidate, or more
than one, is reported as an annotation problem — never guessed. Rows without candidates
(MLVU's generation tasks) are skipped and counted.
"""

from __future__ import annotations

from pathlib import Path

from paravt.data.questions import resolve_video
from paravt.eval.adapters import register
from paravt.eval.adapters._files import AnnotationError, normalise_text, read_rows, require_dir
from paravt.eval.samples import EvalSample, LoadedSplit, letter

__all__: list[str] = []  # nothing here is for the other rooms

LAYOUT = "DIR/json/<n>_<task>.json (lists with video, question, candidates, answer, question_type)"


def match_answer(answer: str, candidates: list[str]) -> tuple[str | None, str | None]:
    """(gold letter, problem): the candidate equal to ``answer``, exactly or after normalising."""
    exact = [i for i, c in enumerate(candidates) if c == answer]
    if len(exact) == 1:
        return letter(exact[0]), None
    norm = normalise_text(answer)
    loose = [i for i, c in enumerate(candidates) if normalise_text(c) == norm]
    if len(loose) == 1:
        return letter(loose[0]), None
    if not loose:
        return None, f"answer {answer!r} matches no candidate"
    return None, f"answer {answer!r} matches {len(loose)} candidates"


def _task_files(data: Path) -> list[Path]:
    data = Path(data)
    if data.is_file():
        return [data]
    require_dir(data, "MLVU dev")
    for folder in (data / "json", data):
        files = sorted(p for p in folder.glob("*.json") if p.is_file())
        if files:
            return files
    raise AnnotationError(
        f"MLVU dev: no task JSON files found in {data}/json or {data}; expected layout: {LAYOUT}"
    )


@register("mlvu", aliases=("mlvu_dev", "mlvu-dev"), layout=LAYOUT)
def load(data: Path, videos: Path) -> LoadedSplit:
    samples, skipped, sources = [], [], []
    for path in _task_files(data):
        sources.append(str(path))
        task_dir = path.stem
        for i, row in enumerate(read_rows(path)):
            ref = f"{path.name}[{i}]"
            if not isinstance(row, dict) or not row.get("question"):
                skipped.append((ref, "row has no question"))
                continue
            cands = row.get("candidates")
            if not cands:
                skipped.append((ref, "no candidates (generation task, not multiple choice)"))
                continue
            opts = [str(c).strip() for c in cands]
            gold, problem = match_answer(str(row.get("answer", "")).strip(), opts)
            task = str(row.get("question_type") or task_dir)
            samples.append(
                EvalSample(
                    id=f"{task_dir}/{i}",
                    split="mlvu",
                    video=str(resolve_video(videos, str(row.get("video", "")), [task_dir])),
                    question=str(row["question"]).strip(),
                    question_type="mcq",
                    options=opts,
                    answer=gold,
                    groups={"task": task},
                    meta={"answer_text": row.get("answer"), "duration": row.get("duration")},
                    problem=problem,
                )
            )
    return LoadedSplit("mlvu", samples, skipped, sources)
