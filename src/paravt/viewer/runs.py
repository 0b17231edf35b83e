"""Run folders → one plain dict per episode, whatever wrote them.

An eval run (``paravt eval --out``) holds ``results*.jsonl`` (one scored line per question) and
``episodes*.jsonl`` (each episode's turns and calls); a training run holds
``episodes/dump-rank*.jsonl`` (``ParaGRPOConfig.episode_dump_every``: whole episodes with their
reward terms, K and frames). A line that is not a JSON object (a torn or corrupt file) is
skipped and named in the run's ``notes``; the lines after it are still read.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from paravt.errors import UserError
from paravt.schema.episode_log import DumpRow
from paravt.viz.layout import pixel_aspect

__all__: list[str] = []  # nothing here is for the other rooms


@dataclass
class RunData:
    name: str
    path: Path
    kind: str  # "eval" or "train"
    episodes: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_lines(path: Path, notes: list[str]) -> list[dict]:
    """Every JSON-object line of ``path``; each other line is skipped and noted."""
    rows = []
    text = path.read_bytes().decode("utf-8", errors="replace")
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            notes.append(f"{path.name}: skipped line {n}: not JSON ({e.msg} at column {e.colno})")
            continue
        if not isinstance(obj, dict):
            notes.append(f"{path.name}: skipped line {n}: not a JSON object")
            continue
        rows.append(obj)
    return rows


def _correct(score: dict | None):
    if not score:
        return None
    if "correct" in score:
        return float(score["correct"])
    if "iou" in score:
        return float(score["iou"])
    return None


def _from_record(ep: dict, rec: dict) -> None:
    ep["turn_list"] = rec.get("turns") or []
    ep["call_list"] = rec.get("calls") or []
    ep["overview_times"] = rec.get("overview_times") or ep.get("overview_times") or []
    ep["k"] = rec.get("frames_k") or len(ep["overview_times"])
    ep["duration"] = (rec.get("video_meta") or {}).get("duration")
    ep["pixel_aspect"] = pixel_aspect(rec.get("video_meta"))
    ep["answer_source"] = rec.get("answer_source")
    ep["prefix"] = rec.get("prefix") or ""
    ep["subagents"] = rec.get("subagents") or []
    ep["turns"] = len(ep["turn_list"])
    ep["calls"] = len([c for c in ep["call_list"] if c.get("name") is not None])


def _eval_records(path: Path, run: RunData) -> dict[str, dict]:
    """The engine records of ``episodes*.jsonl`` by question id (a resumed run's last wins)."""
    records: dict[str, dict] = {}
    for f in sorted(path.glob("episodes*.jsonl")):
        for row in read_lines(f, run.notes):
            if "id" in row and isinstance(row.get("record"), dict):
                records[str(row["id"])] = row["record"]
    return records


def _eval_rows(path: Path, run: RunData) -> dict[str, dict]:
    """The scored lines of ``results*.jsonl`` by question id; a line without an id is noted."""
    seen: dict[str, dict] = {}
    for f in sorted(path.glob("results*.jsonl")):
        for row in read_lines(f, run.notes):
            if "id" not in row:
                run.notes.append(f"{f.name}: skipped a line without an 'id'")
                continue
            seen[str(row["id"])] = row
    return seen


def _eval_episode(row: dict) -> dict:
    """One results line as the viewer's episode (its turns come from episodes.jsonl)."""
    sample = row.get("sample") or {}
    tools = row.get("tools") or {}
    error = row.get("error") or {}
    return {
        "id": str(row["id"]),
        "question": sample.get("question", ""),
        "options": sample.get("options") or [],
        "question_type": sample.get("question_type", ""),
        "gold": sample.get("answer"),
        "answer": row.get("answer_text"),
        "prediction": row.get("prediction"),
        "correct": _correct(row.get("score")),
        "score": row.get("score") or {},
        "reward": None,
        "video": sample.get("video", ""),
        "error_kind": error.get("kind"),
        "error": error.get("message"),
        "calls": tools.get("attempted", 0),
        "turns": tools.get("turns", 0),
        "overview_times": row.get("overview_times") or [],
        "k": len(row.get("overview_times") or []),
        "turn_list": [],
        "call_list": [],
        "duration": None,
    }


def _eval_run(path: Path, run: RunData) -> None:
    records = _eval_records(path, run)
    seen = _eval_rows(path, run)
    for row in sorted(seen.values(), key=lambda r: int(r.get("index") or 0)):
        ep = _eval_episode(row)
        rec = records.get(ep["id"])
        if rec is not None:
            _from_record(ep, rec)
        elif ep["prediction"]:  # an older run without episodes.jsonl: its final turn only
            ep["turn_list"] = [{"index": ep["turns"] - 1, "text": ep["prediction"]}]
        run.episodes.append(ep)
    if seen and not records:
        run.notes.append(
            "no episodes*.jsonl in this run: only final turns are shown (runs written by "
            "paravt eval since `episodes` keep every turn and call)"
        )


def _train_run(path: Path, run: RunData) -> None:
    """Every dumped episode. The generations of one prompt share its id; each is told apart by
    its step, rank and ``generation`` (its place among that step's episodes of the id)."""
    folder = path / "episodes"
    for f in sorted(folder.glob("dump-rank*.jsonl")):
        seen: dict[tuple, int] = {}
        for n, line in enumerate(read_lines(f, run.notes), 1):
            try:
                row = DumpRow.from_json(line, f"{f.name}: skipped row {n}")
            except UserError as e:  # not a dump row: noted, the rows after it are still read
                run.notes.append(str(e))
                continue
            rec, reward = row.record, row.reward or None
            ep = {
                "id": str(rec.get("id", "")),
                "question": rec.get("question", ""),
                "options": rec.get("options") or [],
                "question_type": rec.get("question_type", ""),
                "gold": rec.get("gold"),
                "answer": rec.get("prediction"),
                "prediction": (rec.get("turns") or [{}])[-1].get("text"),
                "correct": None if reward is None else reward.get("acc"),
                "score": {},
                "reward": reward,
                "advantage": row.advantage,
                "step": row.step,
                "rank": row.rank,
                "video": rec.get("video", ""),
                "error_kind": rec.get("error_kind"),
                "error": rec.get("error"),
                "stored_frames": [asdict(frame) for frame in row.frames],
                "frames_dir": str(folder),
            }
            _from_record(ep, rec)
            ep["k"] = row.k or ep["k"]
            key = (ep["step"], ep["rank"], ep["id"])
            ep["generation"] = seen.get(key, 0)
            seen[key] = ep["generation"] + 1
            run.episodes.append(ep)
    if not run.episodes:
        run.notes.append(
            "no episodes/dump-rank*.jsonl: train with --set trainer.episode_dump_every=N to keep "
            "every Nth step's episodes"
        )


def load_run(path: str | Path, max_episodes: int = 0) -> RunData:
    """The episodes of one run folder (see module docstring), or a ``UserError`` naming it."""
    p = Path(path)
    if not p.is_dir():
        raise UserError(f"{path}: not a run folder")
    if any(p.glob("results*.jsonl")):
        run = RunData(p.name or str(p), p, "eval")
        _eval_run(p, run)
    elif (p / "episodes").is_dir():
        run = RunData(p.name or str(p), p, "train")
        _train_run(p, run)
    else:
        raise UserError(
            f"{path}: neither an eval run (results.jsonl) nor a training run (episodes/); "
            "give a `paravt eval --out` folder or a training output folder"
        )
    if max_episodes:
        run.episodes = run.episodes[:max_episodes]
    return run
