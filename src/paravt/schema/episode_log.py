"""The training run's episode dump row (``episodes/dump-rank{r}.jsonl``): one typed record that
the trainer writes and the viewer reads back, instead of a dict each side spells on its own.

Why a type: the writer (``paravt.train.episode_dump``) and the reader (``paravt.viewer.runs``)
sit in different rooms and used to agree only by key names; a key renamed on one side showed as
an empty column on the other. ``DumpRow.from_json`` reads a line the way the file holds it, and
older lines (without ``frames_dropped`` or ``frames``) still load with their defaults.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from paravt.errors import UserError

__all__ = ["DumpRow", "StoredFrame"]


@dataclass(frozen=True)
class StoredFrame:
    """One image the model saw, kept as a JPEG under ``episodes/frames/``."""

    source: str  # "overview" or "tool" (``ImageItem.source``)
    time: float  # seconds into the video
    file: str  # the JPEG's name under ``episodes/frames/``


@dataclass
class DumpRow:
    """One dumped training episode: its step and rank, the K gating chose, its advantage, its
    reward terms (``RewardBreakdown.terms()``, or None when it was not scored), the episode
    record (``view_dict(record)``: turns, calls, windows, answer) and its stored frames."""

    step: int
    rank: int
    record: dict
    k: int | None = None
    advantage: float | None = None
    reward: dict[str, float] | None = None
    frames: list[StoredFrame] = field(default_factory=list)
    frames_dropped: int = 0

    def to_json(self) -> dict:
        """The line's JSON object (``json.dumps(row.to_json(), default=str)``)."""
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict, where: str = "dump row") -> DumpRow:
        """A line read back; a ``UserError`` naming ``where`` and the key when the line is not a
        dump row (no episode record, a step that is not a number)."""
        record = obj.get("record")
        if not isinstance(record, dict):
            raise UserError(f"{where}: no episode record ('record' is not a JSON object)")
        try:
            step, rank = int(obj.get("step") or 0), int(obj.get("rank") or 0)
        except (TypeError, ValueError):
            raise UserError(f"{where}: 'step' and 'rank' must be integers") from None
        frames = [
            StoredFrame(str(f.get("source", "")), float(f.get("time") or 0.0), str(f["file"]))
            for f in obj.get("frames") or []
            if isinstance(f, dict) and "file" in f
        ]
        reward = obj.get("reward")
        return cls(
            step=step,
            rank=rank,
            record=record,
            k=obj.get("k"),
            advantage=obj.get("advantage"),
            reward=reward if isinstance(reward, dict) else None,
            frames=frames,
            frames_dropped=int(obj.get("frames_dropped") or 0),
        )
