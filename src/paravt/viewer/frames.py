"""The thumbnails of one episode: the overview frames and every executed call's frames.

A training dump stores the frames the model saw (downscaled) beside its records, and those are
copied. Otherwise they are decoded from the video at the times the record holds, with the video
engine's own ``frames_at`` (the frame shown at each time, the same one the engine picked), and
shrunk to ``thumb_width``. A frame that cannot be had (the video moved, a file missing) is
``None``: the page shows a placeholder instead of a broken image. A video of non-square pixels
(its record's ``video_meta`` names their aspect ratio) is shown at its display shape.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from PIL import Image

__all__: list[str] = []  # nothing here is for the other rooms

logger = logging.getLogger(__name__)


def _display_shape(img, pixel_aspect: float):
    """``img`` stretched to the shape it is shown at: each pixel ``pixel_aspect`` times wider
    than high (an anamorphic video's frames are stored squeezed)."""
    if abs(pixel_aspect - 1.0) < 1e-3:
        return img
    return img.resize((max(1, round(img.width * pixel_aspect)), img.height))


def _key(t) -> str:
    return f"{float(t):.3f}"


class FrameStore:
    """Writes thumbnails under ``root`` (the site's ``frames/`` folder); names are ours."""

    def __init__(self, root: Path, thumb_width: int):
        self.root = root
        self.thumb_width = thumb_width
        root.mkdir(parents=True, exist_ok=True)

    def _save(self, frame, name: str, pixel_aspect: float = 1.0) -> str:
        from paravt.video.sheet import frame_image

        img = _display_shape(frame_image(frame), pixel_aspect)
        if img.width > self.thumb_width:
            h = max(1, round(img.height * self.thumb_width / img.width))
            img = img.resize((self.thumb_width, h))
        img.save(self.root / name, format="JPEG", quality=85)
        return f"frames/{name}"

    def _decoded(
        self, video: str, times: list[float], stem: str, pixel_aspect: float = 1.0
    ) -> dict[str, str | None]:
        from paravt.video.source import VideoSource

        out: dict[str, str | None] = {_key(t): None for t in times}
        if not times or not video or not Path(video).is_file():
            return out
        try:
            src = VideoSource(video, num_threads=1)
        except Exception:  # noqa: BLE001 - an unreadable video gives placeholders, not a crash
            logger.warning("cannot open %s for its frames", video, exc_info=True)
            return out
        try:
            frames = src.frames_at(times)
            for n, (t, _) in enumerate(zip(times, frames.times, strict=False)):
                name = f"{stem}-{n:03d}.jpg"
                out[_key(t)] = self._save(frames.frame(n), name, pixel_aspect)
        except Exception:  # noqa: BLE001 - as above: the page shows placeholders
            logger.warning("cannot decode the frames of %s", video, exc_info=True)
        finally:
            src.close()
        return out

    def _copied(self, ep: dict, stem: str) -> dict[str, str | None]:
        out: dict[str, str | None] = {}
        folder = Path(ep.get("frames_dir", ""))
        for n, f in enumerate(ep.get("stored_frames") or []):
            name = Path(str(f.get("file", ""))).name  # a bare file name: never a path out
            src = folder / "frames" / name
            key = _key(f.get("time", 0.0))
            if name and src.is_file():
                dest = f"{stem}-{n:03d}.jpg"
                par = float(ep.get("pixel_aspect") or 1.0)
                if abs(par - 1.0) < 1e-3:
                    shutil.copyfile(src, self.root / dest)
                else:
                    with Image.open(src) as img:
                        _display_shape(img.convert("RGB"), par).save(self.root / dest, "JPEG")
                out[key] = f"frames/{dest}"
            else:
                out.setdefault(key, None)
        return out

    def for_episode(self, ep: dict, stem: str) -> dict[str, str | None]:
        """Time (``%.3f``) → the thumbnail's site-relative path, or None for a placeholder."""
        times = sorted(
            {float(t) for t in ep.get("overview_times") or []}
            | {
                float(t)
                for c in ep.get("call_list") or []
                if c.get("status") == "ok"
                for t in c.get("times") or []
            }
        )
        if ep.get("stored_frames"):
            found = self._copied(ep, stem)
            return {_key(t): found.get(_key(t)) for t in times}
        par = float(ep.get("pixel_aspect") or 1.0)
        return self._decoded(str(ep.get("video") or ""), times, stem, par)
