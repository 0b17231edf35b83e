"""Play the training rows through the real episode engine once, and keep what SFT learns from.

Why through the engine: a tool turn then holds frames really decoded from the row's video at the
windows the trajectory asked for, and the example is the engine's own token stream — prompt ids
(image pads expanded, think prefix included), generated ids, tool-turn ids — cut into prompt,
completion and loss mask by ``paravt.rollout.streams.record_row``, the same function PARA-GRPO
reads its rollouts with. Nothing is decoded and re-tokenised.

The trajectories are generated once per run and cached on disk in the run folder
(``trajectories/``), then reused by every epoch and by ``--resume`` (a stochastic backend would
otherwise hand a resumed run different data than its checkpoint saw). Per kept episode,
``NNNNNN.pt`` holds the ids, the labels and the decoded uint8 frames with their pixel budgets;
``pixel_values`` are rebuilt from the frames when an example is read, by the engine's own
``paravt.agent.vision.preprocess``, which is deterministic and checks each grid against the one
the stream was built with. Frames are kept rather than ``pixel_values`` because they are
smaller (a decoded 96×96 toy frame: 27 KB as uint8; its 64×64 float32 patches: 98 KB).
``episodes.jsonl`` has one line per played episode (the record without tensors, and whether it
was kept and why not); ``report.json`` counts them and marks the cache complete.

An episode is skipped and counted, never fatal, when it errored (unreadable video mid-run, a
failed generation), has no generated token, or is longer than ``max_length``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch

from paravt.agent.backend import Backend
from paravt.backends.factory import backend_from_spec
from paravt.errors import ConfigError
from paravt.rollout.streams import record_row
from paravt.schema.episodes import EpisodeInput, ImageItem
from paravt.train.gating import gated_frames

__all__: list[str] = []  # nothing here is for the other rooms

logger = logging.getLogger(__name__)

#: label of tokens the loss ignores (HF / TRL convention)
IGNORE_INDEX = -100
CACHE_DIR = "trajectories"


# -- the backend ---------------------------------------------------------------------------------
def make_trajectory_backend(spec: str, options: dict, processor: Any) -> Backend:
    """The backend ``trajectories.backend`` names (``paravt.backends.factory.backend_from_spec``),
    in token space over ``processor``: one without a codec is refused, SFT trains on ids."""
    backend = backend_from_spec(spec, options, processor, section="trajectories")
    if backend is None or backend.codec is None:
        raise ConfigError(
            f"trajectories.backend={spec}: the backend works on chat messages only (no codec); "
            "SFT trains on the engine's token ids, so give it the processor (processor=...)"
        )
    return backend


# -- playing and caching -------------------------------------------------------------------------
def episode_inputs(rows: list, frames: int, gating: bool, choices: list[int], seed: int) -> list:
    """One ``EpisodeInput`` per training row; K from gating (epoch 0) or the fixed budget."""
    return [
        EpisodeInput(
            id=r.id,
            video=r.video,
            question=r.question,
            options=r.options,
            question_type=r.question_type,  # type: ignore[arg-type]
            frames_k=gated_frames(seed, r.id, 0, choices, enabled=gating, fixed=frames),
            answer=r.answer,
            meta={"row": r.source_index},
        )
        for r in rows
    ]


def example_of(record: Any, image_pad_id: int, merge: int) -> dict | None:
    """What one kept episode stores: ids, labels (``IGNORE_INDEX`` off the loss mask) and the
    frames with their budgets and grids. None when the record has nothing to learn from."""
    row = record_row(record, image_pad_id, merge)
    if row is None:
        return None
    ids = row.prompt + row.completion
    labels = [IGNORE_INDEX] * len(row.prompt) + [
        t if m else IGNORE_INDEX for t, m in zip(row.completion, row.mask, strict=True)
    ]
    return {
        "id": record.id,
        "input_ids": ids,
        "labels": labels,
        "prompt_len": len(row.prompt),
        "frames": [it.data.contiguous() for it in record.stream.images],
        "frame_meta": [
            (float(it.time), it.source, int(it.min_pixels), int(it.max_pixels), tuple(it.grid_thw))
            for it in record.stream.images
        ],
    }


def images_of(example: dict) -> list[ImageItem]:
    """The stored frames as the engine's ``ImageItem``s (for ``paravt.agent.vision.preprocess``)."""
    return [
        ImageItem(data=f, time=t, source=src, min_pixels=lo, max_pixels=hi, grid_thw=tuple(g))
        for f, (t, src, lo, hi, g) in zip(example["frames"], example["frame_meta"], strict=True)
    ]


def _skip_reason(record: Any, example: dict | None, max_length: int | None) -> str | None:
    if record.status != "ok":
        return f"episode_error:{record.error_kind or 'engine'}"
    if example is None:
        return "no_generated_tokens"
    if max_length is not None and len(example["input_ids"]) > max_length:
        return "too_long"
    return None


def _forget_requests(backend: Any) -> None:
    """Drop the requests a scripted backend keeps of every batch (``ScriptedBackend.batches``
    and ``outputs``, there for tests to read): each request holds its episode's frames, so over a
    run of 400 episodes they grew the process to 12.9 GB; per batch it stays at about 1.3 GB."""
    for name in ("batches", "outputs"):
        kept = getattr(backend, name, None)
        if isinstance(kept, list):
            kept.clear()


class _Progress:
    """How many episodes are played: a bar redrawn in place on a terminal; elsewhere (a log
    file, CI) one line at each tenth of the way and at the end."""

    def __init__(self, console: Any, total: int):
        self.console, self.total, self.done, self.bar = console, total, 0, None
        self._printed = 0
        if console is not None and console.is_terminal:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self.bar = Progress(
                "trajectories", BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=console,
            )  # fmt: skip
            self.task = self.bar.add_task("play", total=total)
            self.bar.start()

    def advance(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done)
        elif self.console is not None:
            tenth = self.done * 10 // max(1, self.total)
            if tenth > self._printed or self.done == self.total:
                self._printed = tenth
                self.console.print(f"trajectories: {self.done}/{self.total} played")

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def generate(
    engine: Any,
    inputs: list[EpisodeInput],
    folder: Path,
    image_pad_id: int,
    merge: int,
    batch_size: int,
    max_length: int | None,
    console: Any = None,
) -> dict:
    """Play ``inputs`` with ``engine`` in batches, write the cache to ``folder``; the report."""
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    kept, skipped, reasons = 0, 0, {}
    tokens = generated = images = 0
    progress = _Progress(console, len(inputs))
    with (folder / "episodes.jsonl").open("w") as log:
        for start in range(0, len(inputs), batch_size):
            records = engine.run(inputs[start : start + batch_size])
            _forget_requests(engine.backend)
            for record in records:
                example = example_of(record, image_pad_id, merge) if record.status == "ok" else None
                why = _skip_reason(record, example, max_length)
                line = record.to_dict()
                line["sft"] = {"kept": why is None, "skip_reason": why}
                log.write(json.dumps(line, default=str) + "\n")
                if why is not None or example is None:  # no example always has its reason
                    why = why or "no_generated_tokens"
                    skipped += 1
                    reasons[why.split(":")[0]] = reasons.get(why.split(":")[0], 0) + 1
                    logger.info("episode %s skipped: %s", record.id, why)
                    continue
                torch.save(example, folder / f"{kept:06d}.pt")
                kept += 1
                tokens += len(example["input_ids"])
                generated += sum(1 for x in example["labels"] if x != IGNORE_INDEX)
                images += len(example["frames"])
            progress.advance(len(records))
    progress.stop()
    report = {
        "episodes": len(inputs),
        "kept": kept,
        "skipped": skipped,
        "skip_reasons": reasons,
        "tokens": tokens,
        "generated_tokens": generated,
        "images": images,
        "complete": True,
    }
    (folder / "report.json").write_text(json.dumps(report, indent=2))
    return report


def read_report(folder: Path) -> dict | None:
    """The cache's report when the cache is complete, else None."""
    path = folder / "report.json"
    if not path.is_file():
        return None
    report = json.loads(path.read_text())
    return report if report.get("complete") else None
