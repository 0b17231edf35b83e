"""Check every row's video once before training; build the TRL dataset from the survivors.

A video is usable when it exists, opens, has a video stream and decodes one frame. Everything
else is skipped with its reason and written to ``skipped_rows.jsonl`` in the run folder.

On several ranks (``Split``) each rank probes its own share of the distinct videos and the
verdicts are gathered, so the start-up decodes each video once in all, not once per rank, and
every rank keeps exactly the same rows: a read that fails on one rank only (a transient network
file system error) is that video's verdict everywhere, never a shorter dataset on one rank.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from paravt.data.rows import ReadResult, SkippedRow, TrainRow, read_rows
from paravt.errors import ConfigError, UserError

__all__: list[str] = []  # nothing here is for the other rooms

logger = logging.getLogger(__name__)


@dataclass
class SkipReport:
    total: int = 0
    kept: int = 0
    skipped: list[SkippedRow] = field(default_factory=list)

    def summary(self) -> dict:
        reasons: dict[str, int] = {}
        for s in self.skipped:
            key = s.reason.split(":")[0]
            reasons[key] = reasons.get(key, 0) + 1
        return {
            "rows": self.total,
            "kept": self.kept,
            "skipped": len(self.skipped),
            "reasons": reasons,
        }

    def write(self, run_dir: str | Path) -> Path:
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        path = run_dir / "skipped_rows.jsonl"
        with path.open("w") as f:
            for s in self.skipped:
                f.write(json.dumps(asdict(s)) + "\n")
        (run_dir / "data_report.json").write_text(json.dumps(self.summary(), indent=2))
        return path


def _probe(path: str) -> str | None:
    """None when the video is usable, else why not."""
    p = Path(path)
    if not p.is_file():
        return "missing: file not found"
    try:
        from paravt.video import VideoSource  # paravt.video loads torch

        with VideoSource(str(p)) as src:  # closed at once: one probe per video of the whole set
            meta = src.meta
            if not meta.duration or meta.duration <= 0:
                return "unreadable: zero duration"
            frames = src.frames_at([min(meta.duration * 0.5, max(meta.duration - 1e-3, 0.0))])
        if len(frames.times) == 0:
            return "unreadable: no frame decodes"
    except Exception as e:  # noqa: BLE001 - any decoder failure means: skip this row, keep training
        logger.warning("probing video %s failed; its rows are skipped", path, exc_info=True)
        return f"unreadable: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return None


@dataclass
class Split:
    """This process's share of the probing: ``rank`` of ``world`` ranks, and ``gather``, an
    all-gather of one picklable object per rank (``accelerate.utils.gather_object``)."""

    rank: int = 0
    world: int = 1
    gather: Callable[[list], list] | None = None

    def __post_init__(self) -> None:
        if self.world > 1 and self.gather is None:
            raise ValueError("Split: several ranks need a gather")

    @property
    def several(self) -> bool:
        """Whether the work is spread over several ranks (else this process does all of it)."""
        return self.world > 1

    def all_gather(self, mine: object) -> list:
        """Every rank's ``mine``, in rank order (this process's alone when there is no gather)."""
        return [mine] if self.gather is None else self.gather([mine])


def _verdicts(videos: list[str], split: Split) -> dict[str, str | None]:
    """Every video's verdict (None = usable); each rank probes every ``world``-th video."""
    if not split.several:
        return {v: _probe(v) for v in videos}
    mine = {v: _probe(v) for v in videos[split.rank :: split.world]}
    merged: dict[str, str | None] = {}
    for theirs in split.all_gather(mine):
        merged.update(theirs)
    return merged


def check_videos(
    rows: list[TrainRow], split: Split | None = None
) -> tuple[list[TrainRow], list[SkippedRow]]:
    """``(usable rows, skipped rows)``; each distinct video probed once (on one rank of
    ``split``)."""
    verdicts = _verdicts(list(dict.fromkeys(row.video for row in rows)), split or Split())
    good, bad = [], []
    for row in rows:
        why = verdicts[row.video]
        if why is None:
            good.append(row)
        else:
            bad.append(SkippedRow(row.source_index, row.id, row.video, why))
    return good, bad


def _read_everywhere(path, video_root, fmt: str, split: Split) -> ReadResult:
    """``read_rows`` on every rank; a file one rank cannot read stops every rank (the others
    would wait for it forever in the probes' gather). Any failure counts, not only a
    ``UserError``: a truncated parquet file or an I/O error on one node must not leave that rank
    raising alone."""
    if not split.several:
        return read_rows(path, video_root, fmt)
    result, failure = None, None
    try:
        result = read_rows(path, video_root, fmt)
    except UserError as e:
        failure = str(e)
    except Exception as e:  # noqa: BLE001 - reported to every rank as a UserError just below
        logger.warning("reading training data %s failed on this rank", path, exc_info=True)
        failure = f"cannot read {path}: {type(e).__name__}: {e}"
    failures = [(r, f) for r, f in enumerate(split.all_gather(failure)) if f]
    if failures:
        rank, why = failures[0]
        raise UserError(f"rank {rank}: {why}")
    if result is None:  # read_rows raised with an empty message
        raise UserError(f"cannot read {path}")
    return result


def _same_rows_everywhere(path, good: list[TrainRow], split: Split) -> None:
    """ConfigError on every rank when the ranks kept different rows: their data files differ
    (another copy of ``data.path`` on another node)."""
    if not split.several:
        return
    digest = hashlib.sha1(
        json.dumps([(r.source_index, r.id, r.video) for r in good]).encode()
    ).hexdigest()
    seen = split.all_gather((len(good), digest))
    if len(set(seen)) > 1:
        counts = ", ".join(f"rank {r}: {n} rows" for r, (n, _) in enumerate(seen))
        raise ConfigError(
            f"the ranks read different training rows from {path} ({counts}, or the same count "
            "of other rows): every node must read the same data file; put it on the shared "
            "file system"
        )


def load_training_rows(
    path,
    video_root=None,
    fmt="auto",
    limit: int | None = None,
    report_dir=None,
    split: Split | None = None,
) -> tuple[list[TrainRow], SkipReport]:
    """Rows with a readable video, and the report of the rest. ``report_dir``: write the report
    there first — also when no row is usable, so the error's list of skipped rows exists.
    ``split``: probe the videos across ranks, every rank getting the same rows (module doc).

    ``limit`` keeps the first N rows of the file, usable or not, and the report covers exactly
    those N (a row the parser rejected further down is not counted against a short run)."""
    split = split or Split()
    result = _read_everywhere(path, video_root, fmt, split)
    rows, parse_skipped = result.rows, result.skipped
    if limit:
        cutoff = sorted([r.source_index for r in rows] + [s.index for s in parse_skipped])[:limit]
        last = cutoff[-1] if cutoff else -1
        rows = [r for r in rows if r.source_index <= last]
        parse_skipped = [s for s in parse_skipped if s.index <= last]
    good, bad = check_videos(rows, split)
    _same_rows_everywhere(path, good, split)
    skipped = sorted(parse_skipped + bad, key=lambda s: s.index)
    report = SkipReport(total=len(rows) + len(parse_skipped), kept=len(good), skipped=skipped)
    if report_dir is not None:
        report.write(report_dir)
    if not good:
        raise UserError(
            f"no usable training rows in {path}: {report.summary()} — check data.video_root and the files "
            "listed in skipped_rows.jsonl"
        )
    return good, report


def to_dataset(rows: list[TrainRow]):
    """A ``datasets.Dataset`` the GRPO sampler can index; JSON columns keep mixed types intact."""
    from datasets import Dataset

    return Dataset.from_dict(
        {
            "prompt": [r.question for r in rows],
            "prompt_id": [r.id for r in rows],
            "video": [r.video for r in rows],
            "question_type": [r.question_type for r in rows],
            "options_json": [json.dumps(r.options) for r in rows],
            "answer_json": [json.dumps(r.answer) for r in rows],
        }
    )
