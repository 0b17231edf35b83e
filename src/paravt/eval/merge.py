"""Merge the outputs of shards run on separate machines into one results file and summary.

Each shard's folder holds ``run-II-of-NN.json`` (which samples it was assigned, and the protocol)
and ``results-II-of-NN.jsonl``. Merging checks that every shard of ``N`` is present exactly once,
that all shards ran the same protocol on the same split, and that each assigned sample has a
result. A sample with two results (the same shard merged twice, overlapping folders) is reported
as a duplicate and kept once; a sample with none is ``missing`` — an error unless
``allow_missing``, in which case it is counted as an error result in the denominator.

``merge_runs`` is three steps: ``validate`` (the shards fit together), ``collect`` (one row per
assigned sample) and ``write`` (the results file and the summary).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from paravt.errors import UserError
from paravt.eval.metrics import DEFAULT_VARIANT, summarize_results
from paravt.eval.results import ResultRow, read_results, write_json_atomic, write_results
from paravt.eval.scoring import score_row

__all__ = ["merge_runs"]


@dataclass
class Shard:
    """One shard's ``run*.json`` (its metadata) and the results file beside it."""

    run_file: Path
    meta: dict
    results_file: Path

    @property
    def position(self) -> tuple[int, int]:
        """``(I, N)`` of ``I/N``."""
        i, n = (int(x) for x in str(self.meta["shard"]).split("/"))
        return i, n


@dataclass
class ShardSet:
    """The shards of one split, validated: ``present`` maps each shard index to its run file."""

    shards: list[Shard]
    split: str
    n: int
    present: dict[int, Path]
    absent: list[int]

    @property
    def first(self) -> dict:
        return self.shards[0].meta


@dataclass
class Collected:
    """One row per assigned sample that has one, and what is wrong with the rest."""

    rows: list[ResultRow]
    expected: list[str]  # every assigned id in shard order (placeholders for absent shards)
    missing: list[str]
    duplicates: list[str] = field(default_factory=list)
    foreign: int = 0  # results of samples their shard was not assigned


def _run_files(inputs: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in inputs:
        p = Path(p)
        if p.is_dir():
            found = sorted(p.glob("run*.json"))
            if not found:
                raise UserError(f"merge: {p} holds no run*.json (is it an eval --out folder?)")
            files.extend(found)
        elif p.is_file() and p.name.startswith("run") and p.suffix == ".json":
            files.append(p)
        else:
            raise UserError(f"merge: {p} is neither an eval --out folder nor a run*.json file")
    return files


def read_shards(inputs: list[Path]) -> list[Shard]:
    """The shards named by ``inputs`` (eval --out folders or run*.json files)."""
    shards = []
    for f in _run_files(inputs):
        results_file = f.with_name("results" + f.name[len("run") : -len(".json")] + ".jsonl")
        shards.append(Shard(f, json.loads(f.read_text()), results_file))
    if not shards:
        raise UserError("merge: no shard outputs given")
    return shards


def _check_same_run(shard: Shard, first: Shard) -> None:
    """``shard`` ran the split, protocol and ``--limit`` of ``first``."""
    meta, ref = shard.meta, first.meta
    if meta["split"] != ref["split"]:
        raise UserError(f"merge: {shard.run_file} is split {meta['split']!r}, not {ref['split']!r}")
    if meta["protocol_config"] != ref["protocol_config"]:
        diff = sorted(
            k
            for k in meta["protocol_config"]
            if meta["protocol_config"].get(k) != ref["protocol_config"].get(k)
        )
        raise UserError(
            f"merge: {shard.run_file} ran a different protocol ({', '.join(diff)}) "
            f"than {first.run_file}"
        )
    if meta.get("limit") != ref.get("limit"):
        raise UserError(
            f"merge: {shard.run_file} used --limit {meta.get('limit')}, "
            f"{first.run_file} used {ref.get('limit')}"
        )


def validate(shards: list[Shard], allow_missing: bool) -> ShardSet:
    """The shards fit together: one split, one protocol, one ``N``, each shard at most once, and
    none absent unless ``allow_missing``."""
    n = shards[0].position[1]
    present: dict[int, Path] = {}
    for shard in shards:
        _check_same_run(shard, shards[0])
        i, n_i = shard.position
        if n_i != n:
            raise UserError(
                f"merge: {shard.run_file} is shard {shard.meta['shard']} but others are out of {n}"
            )
        if i in present:
            raise UserError(f"merge: shard {i}/{n} given twice ({present[i]} and {shard.run_file})")
        present[i] = shard.run_file
    absent = [i for i in range(n) if i not in present]
    if absent and not allow_missing:
        raise UserError(
            f"merge: shards {absent} of {n} are missing (pass --allow-missing to count "
            f"their samples as errors)"
        )
    return ShardSet(shards, shards[0].meta["split"], n, present, absent)


def _absent_ids(shard_set: ShardSet) -> list[str]:
    """Placeholder ids of the samples of absent shards: their ids are unknown, their count not."""
    first = shard_set.first
    total = (
        first["n_split"] if first.get("limit") is None else min(first["limit"], first["n_split"])
    )
    n = shard_set.n
    return [
        f"<shard {i}/{n} sample {k}>"
        for i in shard_set.absent
        for k in range(len(range(i, total, n)))
    ]


def collect(shard_set: ShardSet, allow_missing: bool) -> Collected:
    """Each assigned sample's first result, in split order; a sample without one is an error
    unless ``allow_missing``."""
    expected: list[str] = []
    by_id: dict[str, ResultRow] = {}
    duplicates: list[str] = []
    foreign = 0
    for shard in shard_set.shards:
        assigned = list(shard.meta["assigned"])
        expected.extend(assigned)
        wanted = set(assigned)
        rows = read_results(shard.results_file) if shard.results_file.is_file() else []
        for r in rows:
            if r.id not in wanted:
                foreign += 1
            elif r.id in by_id:
                duplicates.append(r.id)
            else:
                by_id[r.id] = r
    expected.extend(_absent_ids(shard_set))
    missing = [i for i in expected if i not in by_id]
    if missing and not allow_missing:
        raise UserError(
            f"merge: {len(missing)} assigned samples have no result (first: {missing[0]!r}); "
            f"finish those shards with --resume, or pass --allow-missing"
        )
    order = {sid: k for k, sid in enumerate(expected)}
    rows = sorted(by_id.values(), key=lambda r: (r.index, order[r.id]))
    return Collected(rows, expected, missing, duplicates, foreign)


def _missing_row(sample_id: str, index: int, split: str) -> ResultRow:
    row = ResultRow.failed(
        sample_id, index, split, "missing", "no result in any shard", {"id": sample_id}
    )
    return score_row(row)


def write(out: Path, shard_set: ShardSet, got: Collected) -> dict:
    """``out/results.jsonl`` (the rows that exist) and ``out/summary.json`` (missing samples
    counted as errors); returns the summary."""
    out = Path(out)
    write_results(out / "results.jsonl", got.rows)
    order = {sid: k for k, sid in enumerate(got.expected)}
    filled = got.rows + [
        _missing_row(sid, 10**9 + order[sid], shard_set.split) for sid in got.missing
    ]
    metrics = summarize_results(shard_set.split, filled)
    first_run = shard_set.shards[0].run_file
    summary_file = first_run.with_name("summary" + first_run.name[len("run") :])
    previous = json.loads(summary_file.read_text()) if summary_file.is_file() else {}
    variant = previous.get("variant", DEFAULT_VARIANT)
    summary = {
        "benchmark": shard_set.split,
        "variant": variant,
        "headline": metrics["variants"][variant],
        "metrics": metrics,
        "n_split": shard_set.first.get("n_split"),
        "n_assigned": len(got.expected),
        "shards": {
            "n": shard_set.n,
            "merged": sorted(shard_set.present),
            "absent": shard_set.absent,
        },
        "complete": not got.missing and not shard_set.absent,
        "missing": got.missing,
        "duplicates": got.duplicates,
        "foreign_results": got.foreign,
        "protocol": previous.get("protocol"),
        "merged_from": [str(s.run_file) for s in shard_set.shards],
    }
    write_json_atomic(out / "summary.json", summary)
    return summary


def merge_runs(inputs: list[Path], out: Path, allow_missing: bool = False) -> dict:
    """Merge shard outputs into ``out/results.jsonl`` and ``out/summary.json``; returns the summary."""
    shard_set = validate(read_shards(inputs), allow_missing)
    return write(out, shard_set, collect(shard_set, allow_missing))
