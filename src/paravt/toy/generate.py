"""Write one split of the toy task: videos, question rows, and the ``task.json`` manifest.

``make_toy_task(cfg)`` is what ``paravt make-toy-task`` runs; scripts call it directly. The
manifest records the config, the generator version, counts, speed, the sweep windows per
duration, and the needle visibility measured on real overview frames (decoded with
``paravt.video.VideoSource.overview`` and read with ``paravt.toy.detect``) beside the
``K · needle / duration`` it should match.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

from paravt import __version__
from paravt.config import to_dict
from paravt.errors import UserError
from paravt.toy.detect import needle_colour
from paravt.toy.render import encode_mp4, render_frames
from paravt.toy.task import (
    GENERATOR_VERSION,
    ToyTaskConfig,
    VideoSpec,
    expected_visibility,
    question_rows,
    sweep_spacing,
    tiling_windows,
    video_spec,
)
from paravt.video import VideoSource

__all__ = ["make_toy_task"]

MANIFEST = "task.json"
VIDEO_DIR = "videos"


def _prepare(out: Path) -> None:
    """Create ``out/videos`` and prove it is writable, or say which folder to fix."""
    try:
        (out / VIDEO_DIR).mkdir(parents=True, exist_ok=True)
        probe = out / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise UserError(
            f"cannot write the toy task to {out}: {e.strerror or e}; pass a writable OUT folder"
        ) from None


def measure_visibility(
    specs: list[VideoSpec], paths: list[Path], ks: list[int], needle_seconds: float
) -> dict:
    """Per K: share of videos whose K-frame overview shows the needle, and the expected share."""
    seen = {k: 0 for k in ks}
    for spec, path in zip(specs, paths, strict=True):
        with VideoSource(str(path)) as src:
            for k in ks:
                frames = src.overview(k)
                if any(needle_colour(f) == spec.colour for f in frames.parts):
                    seen[k] += 1
    n = len(specs)
    return {
        str(k): {
            "measured": round(seen[k] / n, 4) if n else None,
            "expected": round(
                sum(expected_visibility(k, needle_seconds, s.duration) for s in specs) / n, 4
            )
            if n
            else None,
            "videos": n,
        }
        for k in ks
    }


def _write_jsonl(path: Path, rows: list[dict]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    tmp.replace(path)


def make_toy_task(cfg: ToyTaskConfig, progress=None) -> dict:
    """Generate ``cfg.n`` videos of ``cfg.split`` into ``cfg.out``; returns the split's manifest.

    ``progress(done, total)`` is called after each video. Same config → same bytes of rows and
    the same pixels (the encoder is deterministic in one thread).
    """
    cfg.validate()
    if not cfg.out:
        raise UserError("no output folder given: pass OUT (paravt make-toy-task OUT --n N)")
    out = Path(cfg.out).expanduser()
    _prepare(out)
    t0 = time.perf_counter()
    specs, paths, rows = [], [], []
    for i in range(cfg.n):
        spec = video_spec(cfg, i)
        rel = f"{VIDEO_DIR}/{spec.name}.mp4"
        encode_mp4(render_frames(spec), out / rel, cfg.fps, cfg.keyframe_seconds, cfg.crf)
        specs.append(spec)
        paths.append(out / rel)
        rows.extend(question_rows(cfg, spec, rel))
        if progress is not None:
            progress(i + 1, cfg.n)
    gen_s = time.perf_counter() - t0
    _write_jsonl(out / f"{cfg.split}.jsonl", rows)
    t1 = time.perf_counter()
    m = min(cfg.visibility_videos, len(specs))
    visibility = (
        measure_visibility(specs[:m], paths[:m], list(cfg.visibility_ks), cfg.needle_seconds)
        if m
        else {}
    )
    split = {
        "rows_file": f"{cfg.split}.jsonl",
        "videos": len(specs),
        "rows": len(rows),
        "durations": dict(sorted(Counter(str(s.duration) for s in specs).items())),
        "colours": dict(sorted(Counter(s.colour for s in specs).items())),
        "generate_seconds": round(gen_s, 3),
        "videos_per_second": round(len(specs) / gen_s, 2) if gen_s > 0 else None,
        "visibility": visibility,
        "visibility_seconds": round(time.perf_counter() - t1, 3),
        "sweep": {
            str(d): {
                "windows": tiling_windows(d, cfg.sweep_windows),
                "frame_spacing_s": round(sweep_spacing(d, cfg.sweep_windows), 4),
            }
            for d in cfg.durations
        },
        "config": to_dict(cfg),
    }
    _update_manifest(out / MANIFEST, cfg.split, split)
    return split


def _update_manifest(path: Path, split: str, entry: dict) -> None:
    """Write ``entry`` as ``splits[split]`` of the manifest, keeping the other splits."""
    manifest: dict = {}
    if path.is_file():
        try:
            manifest = json.loads(path.read_text())
        except ValueError:
            manifest = {}
        if manifest.get("generator") != GENERATOR_VERSION:
            manifest = {}  # another generator's splits do not belong beside this one
    manifest.update(generator=GENERATOR_VERSION, paravt_version=__version__)
    manifest.setdefault("splits", {})[split] = entry
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(path)
