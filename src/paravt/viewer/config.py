"""``ViewConfig``: the knobs of ``paravt view``."""

from __future__ import annotations

from dataclasses import dataclass, field

from paravt.errors import ConfigError

__all__ = ["ViewConfig"]


@dataclass
class ViewConfig:
    """``runs``: eval ``--out`` folders or training output folders; ``out``: the site's folder;
    ``thumb_width``: the width frames are stored at (never upscaled); ``max_episodes``: per run
    (0: all)."""

    runs: list[str] = field(default_factory=list)
    out: str = ""
    thumb_width: int = 160
    max_episodes: int = 0

    def __post_init__(self) -> None:
        if self.thumb_width < 16:
            raise ConfigError(f"thumb_width must be at least 16, got {self.thumb_width}")
        if self.max_episodes < 0:
            raise ConfigError(f"max_episodes must be >= 0, got {self.max_episodes}")
