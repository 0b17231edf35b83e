"""Whole training episodes kept for a person to browse (``paravt view``), bounded in size.

``episodes/rank{r}.jsonl`` (``episode_log``) keeps a few numbers per episode; to see what the
policy looked at and wrote, every ``episode_dump_every``-th step's episodes are also written to
``episodes/dump-rank{r}.jsonl``, one ``paravt.schema.episode_log.DumpRow`` a line (the viewer
reads it back through the same type): the episode record (turns, calls, windows, answer:
``schema.episodes.view_dict``), its reward terms, the K gating chose and its advantage, and its
frames (the images the model saw, shrunk to ``episode_dump_thumb`` pixels wide, JPEG) under
``episodes/frames/``. Once the dump reaches ``episode_dump_max_mb`` it stops (one warning), so
a long run cannot fill its disk.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from paravt.schema.episode_log import DumpRow, StoredFrame
from paravt.schema.episodes import view_dict

__all__: list[str] = []  # nothing here is for the other rooms

logger = logging.getLogger(__name__)


def _size(folder: Path) -> int:
    total = 0
    for root, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.path.getsize(os.path.join(root, f))
            except OSError:
                continue
    return total


def _thumb(data, path: Path, width: int) -> None:
    from paravt.video.sheet import frame_image

    img = frame_image(data)
    if img.width > width:
        img = img.resize((width, max(1, round(img.height * width / img.width))))
    img.save(path, format="JPEG", quality=85)


def dump_episodes(
    folder: Path,
    step: int,
    rank: int,
    rows: list[tuple],
    thumb_width: int,
    max_bytes: int,
) -> bool:
    """Append ``rows`` (record, reward breakdown or None, K, advantage) of ``step`` to the dump
    in ``folder`` (the run's ``episodes/``); False once the size bound stopped it."""
    frames = folder / "frames"
    frames.mkdir(parents=True, exist_ok=True)
    used = _size(folder)
    if used >= max_bytes:
        return False
    with (folder / f"dump-rank{rank}.jsonl").open("a") as fh:
        for n, (record, breakdown, k, advantage) in enumerate(rows):
            stored: list[StoredFrame] = []
            for i, item in enumerate(record.stream.images):
                if used >= max_bytes:
                    break
                name = f"s{step}-r{rank}-e{n}-{i}.jpg"
                _thumb(item.data, frames / name, thumb_width)
                used += (frames / name).stat().st_size
                stored.append(StoredFrame(item.source, float(item.time), name))
            row = DumpRow(
                step=step,
                rank=rank,
                record=view_dict(record),
                k=k,
                advantage=advantage,
                reward=None if breakdown is None else breakdown.terms(),
                frames=stored,
                frames_dropped=len(record.stream.images) - len(stored),
            )
            line = json.dumps(row.to_json(), default=str)
            fh.write(line + "\n")
            used += len(line) + 1
    if used >= max_bytes:
        logger.warning(
            "episode dump reached episode_dump_max_mb (%.1f MB) at step %d: no more episodes are "
            "dumped in %s",
            max_bytes / 1e6,
            step,
            folder,
        )
        return False
    return True
