"""A generic JSON-lines split: the user's own questions (and the toy task's eval split).

Expected layout::

    --data PATH:   a .jsonl file, or a folder holding eval.jsonl (else test.jsonl, else its
                   only *.jsonl file)
    --videos DIR:  relative ``video`` paths are resolved under DIR (absolute paths as given)

One JSON object per line, one question per row, read by ``paravt.data.questions.parse_question``
(the fields and defaults ``infer`` and training read too): ``video`` (required here),
``question``, ``options``, ``question_type``, ``answer``; optional ``id`` (else ``<file
stem>-<line>``), ``duration_group`` and ``task_type`` (accuracy is also reported by these
groups) and ``meta`` (kept as is).

A line that is not JSON, a row that is not a question (``RowError``) or one with no video is
skipped and listed with its reason; a row whose gold answer cannot be used stays in the denominator as an ``annotation``
error.
"""

from __future__ import annotations

from pathlib import Path

from paravt.data.questions import RowError, parse_question, resolve_video
from paravt.eval.adapters import register
from paravt.eval.adapters._files import AnnotationError, in_file_order, read_jsonl
from paravt.eval.samples import EvalSample, LoadedSplit

__all__: list[str] = []  # nothing here is for the other rooms

LAYOUT = "a .jsonl file, or a folder with eval.jsonl; rows {video, question, options, answer, question_type}"
PREFERRED = ("eval.jsonl", "test.jsonl")


def find_rows_file(data: Path) -> Path:
    """The rows file ``data`` names: the file itself, or the split file in the folder."""
    if data.is_file():
        return data
    if not data.is_dir():
        raise AnnotationError(f"jsonl: {data} is neither a .jsonl file nor a folder ({LAYOUT})")
    for name in PREFERRED:
        if (data / name).is_file():
            return data / name
    found = sorted(data.glob("*.jsonl"))
    if len(found) == 1:
        return found[0]
    listed = ", ".join(p.name for p in found) or "none"
    raise AnnotationError(
        f"jsonl: cannot tell which rows file in {data} to read (found: {listed}); "
        f"pass the file itself as --data, or name it eval.jsonl"
    )


@register("jsonl", aliases=(), layout=LAYOUT)
def load(data: Path, videos: Path) -> LoadedSplit:
    path = find_rows_file(Path(data))
    samples: list[EvalSample] = []
    skipped: list[tuple[str, str]] = []
    for lineno, row in read_jsonl(path, skipped):
        ref = f"{path.name}:{lineno}"
        try:
            q = parse_question(row)
        except RowError as e:
            skipped.append((ref, str(e)))
            continue
        if not q.video:
            skipped.append((ref, "no video given"))
            continue
        samples.append(
            EvalSample(
                id=q.id or f"{path.stem}-{lineno}",
                split="jsonl",
                video=str(resolve_video(videos, q.video)),
                question=q.question,
                question_type=q.question_type,
                options=(q.options or []) if q.question_type == "mcq" else [],
                answer=q.gold,
                groups=q.groups,
                meta=dict(q.meta, source_line=lineno),
                problem=q.problem,
            )
        )
    return LoadedSplit("jsonl", samples, in_file_order(skipped), [str(path)])
