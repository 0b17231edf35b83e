"""Write the whole site: ``index.html``, ``episodes/*.html``, ``compare.html`` (two runs or
more), ``frames/*.jpg`` and ``assets/``. Every file name is ours (run and episode numbers), so
nothing a run holds can choose where a file goes."""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

from paravt.errors import UserError
from paravt.viewer.config import ViewConfig
from paravt.viewer.frames import FrameStore
from paravt.viewer.render import compare_page, episode_page, index_page
from paravt.viewer.runs import load_run

__all__ = ["write_site"]


def write_site(cfg: ViewConfig, progress=None) -> dict:
    """Build the site of ``cfg.runs`` in ``cfg.out``; returns what was written."""
    if not cfg.runs:
        raise UserError("paravt view needs at least one RUN folder")
    if not cfg.out:
        raise UserError("paravt view needs -o DIR (the folder the site is written to)")
    runs = [load_run(r, cfg.max_episodes) for r in cfg.runs]
    out = Path(cfg.out)
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    assets = out / "assets"
    assets.mkdir(exist_ok=True)
    static = resources.files("paravt.viewer") / "static"
    for name in ("viewer.js", "viewer.css"):
        with resources.as_file(static / name) as src:
            shutil.copyfile(src, assets / name)
    store = FrameStore(out / "frames", cfg.thumb_width)
    links: dict[tuple[int, int], str] = {}
    for r_i, run in enumerate(runs):
        for n, ep in enumerate(run.episodes):
            ep["_key"] = n
            links[(r_i, n)] = f"episodes/r{r_i}-{n:05d}.html"
    notes = [f"{run.name}: {note}" for run in runs for note in run.notes]
    missing = 0
    for r_i, run in enumerate(runs):
        for n, ep in enumerate(run.episodes):
            thumbs = store.for_episode(ep, f"r{r_i}-{n:05d}")
            missing += sum(v is None for v in thumbs.values())
            html_text = episode_page(run, ep, thumbs, "../index.html")
            (out / links[(r_i, n)]).write_text(html_text, encoding="utf-8")
            if progress:
                progress(run.name, n + 1, len(run.episodes))
    compare = len(runs) > 1
    if compare:
        (out / "compare.html").write_text(compare_page(runs, links), encoding="utf-8")
    (out / "index.html").write_text(index_page(runs, links, notes, compare), encoding="utf-8")
    return {
        "index": str((out / "index.html").resolve()),
        "runs": [{"name": r.name, "kind": r.kind, "episodes": len(r.episodes)} for r in runs],
        "missing_frames": missing,
        "notes": notes,
    }
