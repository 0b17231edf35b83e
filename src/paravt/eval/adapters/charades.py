"""Charades-STA (test) from its native text annotation file.

Expected layout::

    --data DIR:    DIR/charades_sta_test.txt   (or any *.txt in DIR)
    --videos DIR:  DIR/<VIDID>.mp4             (the Charades videos, e.g. the 480p release)

One query per line: ``VIDID start end##sentence`` (seconds). The gold span is kept as written —
some end after the video does — because the metric (intersection over the hull) is defined on
the annotation, not on the decoded length.
"""

from __future__ import annotations

from pathlib import Path

from paravt.data.questions import resolve_video
from paravt.eval.adapters import register
from paravt.eval.adapters._files import AnnotationError, find_file
from paravt.eval.samples import EvalSample, LoadedSplit

__all__: list[str] = []  # nothing here is for the other rooms

LAYOUT = "DIR/charades_sta_test.txt with lines 'VIDID start end##sentence'"


def parse_line(line: str) -> tuple[str, float, float, str]:
    """``"3MSZA 24.3 30.4##person turns on a light."`` → ``("3MSZA", 24.3, 30.4, "person …")``."""
    if "##" not in line:
        raise ValueError("no '##' between the span and the sentence")
    head, sentence = line.split("##", 1)
    parts = head.split()
    if len(parts) != 3:
        raise ValueError("expected 'VIDID start end' before '##'")
    vid, start, end = parts[0], float(parts[1]), float(parts[2])
    if not sentence.strip():
        raise ValueError("empty sentence")
    return vid, start, end, sentence.strip()


@register("charades", aliases=("charades-sta", "charades_sta"), layout=LAYOUT)
def load(data: Path, videos: Path) -> LoadedSplit:
    ann = find_file(data, ["charades_sta_test.txt", "*test*.txt", "*.txt"], "Charades-STA", LAYOUT)
    samples, skipped = [], []
    try:
        lines = ann.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError:
        raise AnnotationError(f"{ann}: not UTF-8 text") from None
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            vid, start, end, sentence = parse_line(line)
        except ValueError as e:
            skipped.append((f"{ann.name}:{lineno}", str(e)))
            continue
        problem = None if end > start else f"gold span [{start}, {end}] is empty or reversed"
        samples.append(
            EvalSample(
                id=f"{vid}#{lineno}",
                split="charades",
                video=str(resolve_video(videos, vid)),
                question=sentence,
                question_type="tvg",
                options=[],
                answer=[start, end],
                groups={},
                meta={"video_id": vid},
                problem=problem,
            )
        )
    return LoadedSplit("charades", samples, skipped, [str(ann)])
