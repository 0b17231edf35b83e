"""Benchmark adapters: each reads one benchmark's native files into ``EvalSample`` objects.

Seven splits from six benchmarks. ``load_split(name, data, videos)`` is the one entry point;
names are case-insensitive and accept the common spellings (``video-mme``, ``charades-sta``…).
"""

from __future__ import annotations

from pathlib import Path

from paravt.errors import UserError
from paravt.eval.adapters import charades, jsonl, longvideobench, lvbench, mlvu, mmvu, videomme
from paravt.eval.samples import LoadedSplit

SPLITS = (
    "videomme",
    "videomme_sub",
    "longvideobench",
    "lvbench",
    "mlvu",
    "mmvu",
    "charades",
    "jsonl",
)

_ALIASES = {
    "video-mme": "videomme",
    "videomme_wo_sub": "videomme",
    "video-mme-sub": "videomme_sub",
    "videomme-sub": "videomme_sub",
    "videomme_w_sub": "videomme_sub",
    "lvb": "longvideobench",
    "longvideobench_val": "longvideobench",
    "mlvu_dev": "mlvu",
    "mlvu-dev": "mlvu",
    "mmvu_val": "mmvu",
    "charades-sta": "charades",
    "charades_sta": "charades",
}


def canonical_split(name: str) -> str:
    key = str(name).strip().lower()
    key = _ALIASES.get(key, key)
    if key not in SPLITS:
        raise UserError(f"unknown benchmark {name!r}; choose one of: {', '.join(SPLITS)}")
    return key


def load_split(name: str, data: str | Path, videos: str | Path) -> LoadedSplit:
    """Read the split ``name`` from the annotation folder ``data`` and the video folder ``videos``.

    Sample ids are made unique: a repeated id (a re-used question id in a release) gets a
    ``~2``, ``~3``… suffix and the renaming is listed in ``LoadedSplit.renamed`` (and the
    summary), so results files can key on ids without losing a question.
    """
    loaded = _load(canonical_split(name), Path(data), Path(videos))
    seen: dict[str, int] = {}
    for sample in loaded.samples:
        count = seen.get(sample.id, 0) + 1
        seen[sample.id] = count
        if count > 1:
            new = f"{sample.id}~{count}"
            while new in seen:
                count += 1
                new = f"{sample.id}~{count}"
            seen[new] = 1
            loaded.renamed.append((sample.id, new))
            sample.id = new
    return loaded


def _load(split: str, data: Path, videos: Path) -> LoadedSplit:
    if split in ("videomme", "videomme_sub"):
        return videomme.load(data, videos, subtitles=split == "videomme_sub")
    if split == "longvideobench":
        return longvideobench.load(data, videos)
    if split == "lvbench":
        return lvbench.load(data, videos)
    if split == "mlvu":
        return mlvu.load(data, videos)
    if split == "mmvu":
        return mmvu.load(data, videos)
    if split == "jsonl":
        return jsonl.load(data, videos)
    return charades.load(data, videos)
