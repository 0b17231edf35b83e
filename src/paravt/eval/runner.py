"""Run one split: samples → episode engine in batches → scored JSON lines → summary.

Honesty rules this module enforces:

- every sample assigned to this run ends up as exactly one result line: a missing or unreadable
  video, an unusable annotation, a backend failure or an engine crash is an ``error`` result
  (scored 0, in the denominator), never a skipped sample;
- a result line is appended and flushed as soon as its sample finishes, so a killed run loses at
  most the batch in flight; ``resume`` skips finished ids, repairs a torn last line and refuses to
  continue under a different protocol;
- shards (``I/N``) take every N-th sample of the (limited) split in file order, so shards of the
  same split are disjoint, cover it, and can be merged (``paravt.eval.merge``).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from paravt.agent.engine import EpisodeEngine
from paravt.agent.preflight import VideoChecks, check_budget, text_counters
from paravt.agent.prompts import check_user_template
from paravt.destinations import check_folder_destination
from paravt.errors import Interrupted, UserError
from paravt.eval import subtitles as subs
from paravt.eval.adapters import canonical_split, load_split
from paravt.eval.config import EvalConfig, parse_shard, protocol_view, shard_tag
from paravt.eval.episodes import episode_input, row_of
from paravt.eval.judge import make_judge
from paravt.eval.metrics import DEFAULT_VARIANT, running_line, summarize_results
from paravt.eval.protocol import describe
from paravt.eval.results import (
    ResultRow,
    ResultsFile,
    iter_unique,
    read_results,
    write_json_atomic,
    write_results,
)
from paravt.eval.samples import EvalSample
from paravt.eval.scoring import score_row
from paravt.models.locate import LocatedModel, locate_model, weights_error
from paravt.schema.episodes import view_dict

__all__ = ["RETRYABLE_KINDS", "RunPaths", "run_eval"]

logger = logging.getLogger(__name__)


@dataclass
class RunPaths:
    results: Path
    summary: Path
    run: Path
    episodes: Path

    @classmethod
    def for_config(cls, cfg: EvalConfig) -> RunPaths:
        out, tag = Path(cfg.out), shard_tag(cfg.shard)
        return cls(
            out / f"results{tag}.jsonl",
            out / f"summary{tag}.json",
            out / f"run{tag}.json",
            out / f"episodes{tag}.jsonl",
        )


def select_shard(samples: list[EvalSample], shard: str) -> list[EvalSample]:
    """Every N-th sample starting at I (deterministic: depends only on file order)."""
    i, n = parse_shard(shard)
    return samples[i::n]


def _require(cfg: EvalConfig) -> None:
    for name, flag in (
        ("benchmark", "--benchmark"),
        ("data", "--data"),
        ("videos", "--videos"),
        ("out", "--out"),
    ):
        if not getattr(cfg, name):
            raise UserError(f"{flag} is required for an evaluation run")
    check_folder_destination(cfg.out, "--out ")  # before the data, the model, a video
    if cfg.script and not Path(cfg.script).is_file():
        raise UserError(
            f"--script {cfg.script}: file not found (the scripted backend's completions)"
        )


def _flat(tree: dict, prefix: str = "") -> dict:
    """``{"engine": {"frames": 2}}`` → ``{"engine.frames": 2}`` (to name what differs)."""
    out: dict = {}
    for k, v in tree.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _check_resume(cfg: EvalConfig, paths: RunPaths) -> None:
    """Refuse to mix runs: existing results need --resume and the same protocol."""
    has_results = paths.results.is_file() and paths.results.stat().st_size > 0
    if has_results and not cfg.resume:
        raise UserError(
            f"{paths.results} already holds results; pass --resume to continue that run, "
            f"or choose another --out"
        )
    if has_results and paths.run.is_file():
        import json

        previous = json.loads(paths.run.read_text()).get("protocol_config", {})
        current = protocol_view(cfg)
        if previous != current:
            old, new = _flat(previous), _flat(current)
            diff = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
            raise UserError(
                f"--resume: {paths.run} was written with a different protocol "
                f"(differs in: {', '.join(diff)}); rerun with the same settings or another --out"
            )


class Runner:
    """One evaluation run over the samples assigned to this shard."""

    def __init__(
        self,
        cfg: EvalConfig,
        backend: Any = None,
        progress: Callable | None = None,
        before_load: Callable[[], None] | None = None,
    ):
        _require(cfg)
        self._before_load = before_load  # e.g. the CLI quiets transformers' own bars
        self.cfg = cfg
        self.split = canonical_split(cfg.benchmark)
        self.paths = RunPaths.for_config(cfg)
        self._backend = backend
        self.backend_label = (
            None if backend is None else str(getattr(backend, "name", type(backend).__name__))
        )
        self._engine = None
        self._progress = progress
        self._records: dict[str, Any] = {}  # this batch's episode records, kept for sheets
        self._index: dict[str, int] = {}  # sample id -> its position in the split, set by run()
        self.sheets_written: list[str] = []
        self.judge = make_judge(cfg.judge_base_url, cfg.judge_model, cfg.judge_api_key)
        # before anything loads: the model is found (``run``), and each video opens (once)
        # before the model is loaded for it; the model's context bounds an episode's prompt
        self.model: LocatedModel | None = None
        self._videos = VideoChecks()
        self._budget_warned = False
        self._text: Any = None  # a first turn's text counter, made at the first budget check

    # -- setup --------------------------------------------------------------------------------
    def _engine_for_run(self):
        # the backends load the model libraries (openai's SDK alone takes 1.7 s): a run that
        # stops before its first episode (a mistyped --model, every video missing) never does
        from paravt.backends.factory import check_serving, make_backend

        if self._engine is None:
            if self._backend is None:
                if self._before_load is not None:
                    self._before_load()
                try:
                    self._backend = make_backend(self.cfg.backend, script=self.cfg.script)
                except Exception as e:
                    typed = weights_error(e, self.cfg.backend.model)
                    if typed is None:
                        raise
                    raise typed from e
                check_serving(self._backend, self.cfg.engine)
            self._engine = EpisodeEngine(self._backend, self.cfg.engine, keep_pixels=False)
        return self._engine

    def load(self):
        loaded = load_split(self.split, self.cfg.data, self.cfg.videos)
        samples = loaded.samples
        if self.cfg.limit is not None:
            samples = samples[: self.cfg.limit]
        index = {s.id: i for i, s in enumerate(loaded.samples)}
        return loaded, select_shard(samples, self.cfg.shard), index

    # -- per batch ----------------------------------------------------------------------------
    def _question_for(self, sample: EvalSample) -> tuple[str, dict | None]:
        """The question text given to the engine (Video-MME subtitles prepended when asked)."""
        if self.split != "videomme_sub" or self.cfg.subtitles == "none":
            return sample.question, None

        srt = sample.meta.get("subtitle_path")
        if not srt:
            return sample.question, {"mode": self.cfg.subtitles, "lines": 0, "file": None}
        cues = subs.read_srt(Path(srt))
        info: dict = {"mode": self.cfg.subtitles, "file": Path(srt).name}
        if self.cfg.subtitles == "frames":
            times = subs.frame_times_for(
                sample.video, self.cfg.engine.frames, self.cfg.engine.overview_sampling
            )
            cues = subs.select_cues(cues, times)
            info["planned_times"] = [round(t, 3) for t in times]
        info["lines"] = len(cues)
        return subs.subtitle_block(cues) + sample.question, info

    def _failed(self, sample: EvalSample, kind: str, message: str) -> ResultRow:
        return ResultRow.failed(
            sample.id, self._index[sample.id], self.split, kind, message, sample.to_dict()
        )

    def _prepare(self, sample: EvalSample) -> tuple[Any, dict | None] | ResultRow:
        """The engine input (and subtitle info) of ``sample``, or its error row when it cannot
        be run: an unusable annotation, a missing or unreadable video or subtitle file."""
        if sample.problem:
            return self._failed(sample, "annotation", sample.problem)
        if not Path(sample.video).is_file():
            return self._failed(sample, "video_missing", f"video not found: {sample.video}")
        try:
            facts = self._videos.check(sample.video)
        except UserError as e:  # the video room's one-line error: this sample's only
            return self._failed(sample, "video", str(e))
        try:
            question, sub_info = self._question_for(sample)
        except Exception as e:  # an unreadable video/subtitle must not stop the run
            logger.warning("sample %s: cannot build its question", sample.id, exc_info=True)
            return self._failed(sample, "video", f"{type(e).__name__}: {e}")
        try:
            inp = episode_input(sample, question)
        except UserError as e:  # e.g. more options than letters: this sample's problem only
            return self._failed(sample, "annotation", str(e))
        self._check_budget(facts, inp)
        return inp, sub_info

    def _locate_model(self) -> LocatedModel | None:
        """The local model this run will load, found before it starts (None: another backend)."""
        local = self._backend is None and self.cfg.script is None
        if local and self.cfg.backend.kind == "hf":
            return locate_model(self.cfg.backend.model)
        return None

    def _check_budget(self, facts, inp) -> None:
        """A first turn past the model's context stops the run (the settings are wrong for
        every sample, not this one); the first warning of one near it is logged once. Its
        text is counted with the model's tokenizer once the images come near the context."""
        model = self.model
        if model is None or model.arch is None or model.context_length is None:
            return
        if self._text is None:
            self._text = text_counters(self.cfg.backend.model, self.cfg.engine, model.arch)
        engine = self.cfg.engine
        found = check_budget(
            engine, facts, engine.frames, model.arch, model.context_length,
            text=self._text(inp),
        )  # fmt: skip
        if found and not self._budget_warned:
            self._budget_warned = True
            logger.warning("%s (said once per run)", found[0])

    def _run_batch(self, batch: list[EvalSample]) -> list[ResultRow]:
        """Unscored rows for ``batch`` in order; any failure becomes that sample's error row."""
        rows: list[ResultRow | None] = [None] * len(batch)
        runnable: list[tuple[int, Any, dict | None]] = []
        for pos, sample in enumerate(batch):
            prepared = self._prepare(sample)
            if isinstance(prepared, ResultRow):
                rows[pos] = prepared
            else:
                runnable.append((pos, *prepared))
        if runnable:
            engine = self._engine_for_run()
            records = self._run_engine(engine, [inp for _, inp, _ in runnable])
            for (pos, _, sub_info), rec in zip(runnable, records, strict=True):
                sample = batch[pos]
                if isinstance(rec, Exception):
                    rows[pos] = self._failed(sample, "engine", f"{type(rec).__name__}: {rec}")
                    continue
                row = row_of(rec, sample, self._index[sample.id], self.split)
                if self.cfg.sheets or self.cfg.episodes:
                    self._records[sample.id] = rec
                if sub_info is not None:
                    planned = sub_info.pop("planned_times", None)
                    if planned is not None and row.overview_times:
                        sub_info["frames_match"] = _same_times(planned, row.overview_times)
                    row.subtitles = sub_info
                rows[pos] = row
        return rows  # type: ignore[return-value]

    @staticmethod
    def _run_engine(engine, inputs: list) -> list:
        """Records for ``inputs``; an engine crash is retried per episode to isolate it."""
        try:
            records = engine.run(inputs)
            if len(records) == len(inputs):
                return list(records)
        except Exception:  # noqa: BLE001 - which episode broke the batch is found below
            logger.warning(
                "the engine failed on a batch of %d episodes; running each alone to find which",
                len(inputs),
                exc_info=True,
            )
            records = None
        out: list = []
        for inp in inputs:
            try:
                out.append(engine.run([inp])[0])
            except Exception as e:  # noqa: BLE001 - this episode's error, its siblings go on
                logger.exception("the engine failed on episode %s", inp.id)
                out.append(e)
        return out

    # -- the run ------------------------------------------------------------------------------
    def run(self) -> dict:
        """Run the assigned samples not yet in the results file; the summary. Ctrl-C keeps every
        scored row, writes the summary of what is there and raises ``Interrupted`` (the CLI
        names the command that continues)."""
        started = time.time()
        loaded, assigned = self._start()
        try:
            self._score(assigned)
        except KeyboardInterrupt:
            summary = self._summary(loaded, assigned, started)
            done = summary["n_assigned"] - len(summary["missing"])
            raise Interrupted(
                f"{done} of {summary['n_assigned']} questions are scored and kept in "
                f"{self.paths.results}"
            ) from None
        summary = self._summary(loaded, assigned, started)
        _say_warnings(summary, self.paths.summary)
        return summary

    def _start(self) -> tuple[Any, list[EvalSample]]:
        """Read the split, check what can be checked before a model loads, record the run."""
        loaded, assigned, self._index = self.load()
        if loaded.ignored:
            logger.warning(
                "--data %s: read %s; not read: %s (pass one file as --data to choose it)",
                self.cfg.data,
                ", ".join(Path(p).name for p in loaded.sources),
                ", ".join(Path(p).name for p in loaded.ignored),
            )
        _check_user_template(self.cfg.engine.user_template, assigned)
        _check_resume(self.cfg, self.paths)
        self.model = self._locate_model()
        self.paths.results.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            self.paths.run,
            {
                "split": self.split,
                "shard": self.cfg.shard,
                "limit": self.cfg.limit,
                "n_split": len(loaded.samples),
                "assigned": [s.id for s in assigned],
                "sources": loaded.sources,
                "ignored_files": loaded.ignored,
                "protocol_config": protocol_view(self.cfg),
            },
        )
        return loaded, assigned

    def _score(self, assigned: list[EvalSample]) -> None:
        """Run and score every assigned sample without a result, one flushed line each."""
        writer = ResultsFile(self.paths.results).open_for_append()
        episodes = ResultsFile(self.paths.episodes).open_for_append() if self.cfg.episodes else None
        try:
            previous = read_results(self.paths.results)
            if self.cfg.retry_errors:
                writer.close()
                previous = _drop_retryable(self.paths.results, previous)
                writer.open_for_append()
            done = {r.id for r in previous}
            todo = [s for s in assigned if s.id not in done]
            running = _Running(self.split, self.cfg.variant)
            mine = {s.id for s in assigned}
            for r in iter_unique(previous):
                if r.id in mine:
                    running.add(r)
            if self._progress:
                self._progress(
                    "start", total=len(assigned), done=len(assigned) - len(todo), running=running
                )
            bs = self.cfg.batch_size
            for start in range(0, len(todo), bs):
                batch = todo[start : start + bs]
                for row in self._run_batch(batch):
                    result = score_row(row, judge=self.judge)
                    writer.append(result)
                    rec = self._records.get(row.id)
                    if episodes is not None and rec is not None:
                        episodes.append({"id": row.id, "record": view_dict(rec)})
                    running.add(result)
                    self._maybe_sheet(result)
                    if self._progress:
                        self._progress("advance", running=running)
                self._records.clear()
        finally:
            writer.close()
            if episodes is not None:
                episodes.close()

    def _summary(self, loaded, assigned: list[EvalSample], started: float) -> dict:
        """The summary of the results file as it stands, written to ``summary.json``."""
        results = read_results(self.paths.results)
        summary = build_summary(
            self.split, self.cfg, loaded, assigned, results, self.judge, self.backend_label
        )
        reason = nothing_scored(summary, results, self.cfg)
        if reason is not None:
            summary["nothing_scored"] = reason
        summary["timing"] = {"wall_s": round(time.time() - started, 3)}
        if self.sheets_written:
            summary["sheets"] = self.sheets_written
        write_json_atomic(self.paths.summary, summary)
        return summary

    def _maybe_sheet(self, result: ResultRow) -> None:
        """Write the episode sheet of ``result`` into OUT/sheets/ while ``--sheets`` allows."""
        rec = self._records.get(result.id)
        if rec is None or len(self.sheets_written) >= self.cfg.sheets:
            return
        if self.cfg.sheets_of == "errors" and not is_failure(result):
            return
        from paravt.viz.episode_sheet import write_episode_sheet  # loads torch

        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", result.id)
        path = self.paths.results.parent / "sheets" / f"{result.index:05d}-{name}.png"
        self.sheets_written.append(str(write_episode_sheet(rec, path)))


#: the errors ``--retry-errors`` runs again: a failed backend or engine, and a video that was
#: not there (the run pointed at the wrong ``--videos``, or the files arrived since)
RETRYABLE_KINDS = ("backend", "engine", "video_missing")


def _drop_retryable(path: Path, results: list[ResultRow]) -> list[ResultRow]:
    """Rewrite ``path`` (atomically) without the ``RETRYABLE_KINDS`` failures so a resumed run
    retries them."""
    keep = [r for r in results if r.error is None or r.error.kind not in RETRYABLE_KINDS]
    if len(keep) == len(results):
        return results
    write_results(path, keep)
    return keep


def is_failure(result: ResultRow) -> bool:
    """An errored sample, or a wrong answer (grounding: IoU under 0.5)."""
    if not result.ok:
        return True
    score = result.score
    if "correct" in score:
        return float(score["correct"]) < 1.0
    return float(score.get("iou", 0.0)) < 0.5


def _same_times(a: list[float], b: list[float], tol: float = 0.05) -> bool:
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b, strict=True))


class _Running:
    """The live progress line: the headline over the results so far, by the summary's own rule
    (``metrics.running_line``), so the bar, the groups and the headline agree."""

    def __init__(self, split: str, variant: str = DEFAULT_VARIANT):
        self.split, self.variant = split, variant
        self.results: list[ResultRow] = []

    def add(self, result: ResultRow) -> None:
        self.results.append(result)

    def text(self) -> str:
        return running_line(self.split, self.variant, self.results)


def build_summary(
    split: str,
    cfg: EvalConfig,
    loaded,
    assigned: list[EvalSample],
    results: list[ResultRow],
    judge,
    backend_label: str | None = None,
) -> dict:
    """Metrics of the assigned samples plus the complete protocol (no wall-clock fields)."""
    wanted = {s.id for s in assigned}
    unique = list(iter_unique([r for r in results if r.id in wanted]))
    duplicates = sum(1 for r in results if r.id in wanted) - len(unique)
    seen = {r.id for r in unique}
    missing = [s.id for s in assigned if s.id not in seen]
    metrics = summarize_results(split, unique)
    return {
        "benchmark": split,
        "variant": cfg.variant,
        "headline": metrics["variants"][cfg.variant],
        "metrics": metrics,
        "n_split": len(loaded.samples),
        "n_assigned": len(assigned),
        "shard": cfg.shard,
        "limit": cfg.limit,
        "complete": not missing,
        "missing": missing,
        "duplicates": duplicates,
        "skipped_rows": [{"row": ref, "reason": why} for ref, why in loaded.skipped],
        "renamed_ids": [{"id": old, "now": new} for old, new in loaded.renamed],
        "sources": loaded.sources,
        "ignored_files": loaded.ignored,
        "warnings": [{"id": r.id, "warnings": r.warnings} for r in unique if r.warnings],
        "protocol": describe(cfg, judge.describe(), backend_label),
    }


def nothing_scored(summary: dict, results: list[ResultRow], cfg: EvalConfig) -> str | None:
    """Why no question of a finished run could be scored (every one errored, or none was left
    to run), or None when one was. ``paravt eval`` exits 1 with it; ``retryable`` kinds are the
    ones ``--resume --retry-errors`` runs again."""
    metrics = summary["metrics"]
    if metrics["scored"] > 0 or summary["missing"]:
        return None
    if summary["n_assigned"] == 0:
        skipped = len(summary["skipped_rows"])
        return (
            f"no question to run: --data {cfg.data} gave {summary['n_split']} questions "
            f"({skipped} rows skipped: skipped_rows in the summary), none of them in this run "
            "(--limit, --shard)"
        )
    kinds = metrics["error_kinds"]
    listed = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    why = f"no question could be scored: all {metrics['n']} errored ({listed})"
    missing = [r.error.message for r in results if r.error and r.error.kind == "video_missing"]
    if missing:
        why += f"; {missing[0]}: is --videos {cfg.videos} the split's video folder?"
    return why


def _say_warnings(summary: dict, where: Path) -> None:
    """One stderr line for the questions whose episodes carry warnings (the video's damage,
    frames that could not be decoded); every one is under ``warnings`` in the summary."""
    flagged = summary["warnings"]
    if flagged:
        first = flagged[0]
        logger.warning(
            "%d of %d questions carry warnings about their video or calls (first, %s: %s); "
            "all are under warnings in %s",
            len(flagged),
            summary["n_assigned"],
            first["id"],
            first["warnings"][0],
            where,
        )


def _check_user_template(path: str | None, samples: list[EvalSample]) -> None:
    """A user template that cannot show a sample's question is refused before the first episode
    (``UserTemplateError`` naming the missing field), not after the first batch."""
    if path is not None:
        shown = [
            _Shown(s.id, list(s.options) if s.question_type == "mcq" else None) for s in samples
        ]
        check_user_template(path, shown)


@dataclass
class _Shown:
    """What a user template check needs of a sample: its id and the options it shows."""

    id: str
    options: list[str] | None


def run_eval(
    cfg: EvalConfig,
    backend: Any = None,
    progress: Callable | None = None,
    before_load: Callable[[], None] | None = None,
) -> dict:
    """Run (or resume) one evaluation; returns the summary also written to ``summary.json``.
    ``before_load`` is called once, just before the run loads its backend (a run none of whose
    questions reaches the engine never calls it)."""
    return Runner(cfg, backend=backend, progress=progress, before_load=before_load).run()
