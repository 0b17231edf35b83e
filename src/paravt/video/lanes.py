"""Split the frames a batch needs into decode lanes for a bounded pool of decoders.

Frames are grouped by the keyframe a decoder has to start from (its GOP): frames of one GOP
always go to the same lane, so their decode is shared. Groups are then cut, in time order, into
lanes of roughly equal decode work (frames from the keyframe to the last needed frame), about one
lane per worker across all videos. With one worker every video is one lane: one sorted pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from paravt.video.meta import FrameTable

__all__ = ["gop_groups", "plan_lanes"]


@dataclass
class Lane:
    video: str
    indices: list[int]
    cost: int


def gop_groups(table: FrameTable, indices: list[int]) -> list[tuple[int, list[int]]]:
    """[(decode cost, sorted indices)] per GOP for sorted unique ``indices``."""
    groups: list[tuple[int, list[int]]] = []
    current_key, members = None, []
    for i in indices:
        key = table.keyframe_before(i)
        if key != current_key and members:
            groups.append((members[-1] - current_key + 1, members))
            members = []
        current_key = key
        members.append(i)
    if members:
        groups.append((members[-1] - current_key + 1, members))
    return groups


def plan_lanes(
    needed: dict[str, list[int]], tables: dict[str, FrameTable], workers: int
) -> list[Lane]:
    """Lanes covering every needed index, largest first (longest-processing-time scheduling)."""
    grouped = {v: gop_groups(tables[v], idx) for v, idx in needed.items() if idx}
    total = sum(c for groups in grouped.values() for c, _ in groups)
    if not total:
        return []
    target = total / max(1, workers) if workers > 1 else float("inf")
    lanes: list[Lane] = []
    for video, groups in grouped.items():
        acc: list[int] = []
        cost = 0
        for c, members in groups:
            if acc and cost + c > target * 1.25:
                lanes.append(Lane(video, acc, cost))
                acc, cost = [], 0
            acc.extend(members)
            cost += c
            if cost >= target:
                lanes.append(Lane(video, acc, cost))
                acc, cost = [], 0
        if acc:
            lanes.append(Lane(video, acc, cost))
    lanes.sort(key=lambda lane: -lane.cost)
    return lanes
