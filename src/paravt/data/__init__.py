"""Training rows: ParaVT-style parquet or JSON lines → validated rows → a TRL dataset.

Rows whose video is missing or unreadable are skipped, counted and listed (``SkipReport``) so a
bad file never crashes training; a video that breaks later, mid-training, becomes a tool or
episode error inside the engine.
"""

from paravt.data.rows import SkippedRow, TrainRow, read_rows
from paravt.data.validate import (
    SkipReport,
    Split,
    check_videos,
    load_training_rows,
    to_dataset,
)

__all__ = [
    "SkipReport",
    "SkippedRow",
    "Split",
    "TrainRow",
    "check_videos",
    "load_training_rows",
    "read_rows",
    "to_dataset",
]
