"""Merge the outputs of shards run on separate machines into one results file and summary.

Each shard's folder holds ``run-II-of-NN.json`` (which samples it was assigned, and the protocol)
and ``results-II-of-NN.jsonl``. Merging checks that every shard of ``N`` is present exactly once,
that all shards ran the same protocol on the same split, and that each assigned sample has a
result. A sample with two results (the same shard merged twice, overlapping folders) is reported
as a duplicate and kept once; a sample with none is ``missing`` — an error unless
``allow_missing``, in which case it is counted as an error result in the denominator.
"""

from __future__ import annotations

import json
from pathlib import Path

from paravt.errors import UserError
from paravt.eval.metrics import DEFAULT_VARIANT, summarize_results
from paravt.eval.results import read_results, write_json_atomic


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


def _missing_result(sample_id: str, index: int, split: str) -> dict:
    return {
        "id": sample_id,
        "index": index,
        "split": split,
        "status": "error",
        "error": {"kind": "missing", "message": "no result in any shard"},
        "prediction": None,
        "answer_text": None,
        "tools": {
            "executed": 0,
            "attempted": 0,
            "parseable": 0,
            "malformed": 0,
            "tool_errors": 0,
            "turns": 0,
        },
        "score": {"extracted": None, "correct": 0.0, "iou": 0.0},
        "sample": {"id": sample_id},
    }


def merge_runs(inputs: list[Path], out: Path, allow_missing: bool = False) -> dict:
    """Merge shard outputs into ``out/results.jsonl`` and ``out/summary.json``; returns the summary."""
    runs = []
    for f in _run_files(inputs):
        meta = json.loads(f.read_text())
        results_file = f.with_name("results" + f.name[len("run") : -len(".json")] + ".jsonl")
        runs.append((f, meta, results_file))
    if not runs:
        raise UserError("merge: no shard outputs given")
    first = runs[0][1]
    split = first["split"]
    n = int(str(first["shard"]).split("/")[1])
    seen_shards: dict[int, Path] = {}
    for f, meta, _ in runs:
        if meta["split"] != split:
            raise UserError(f"merge: {f} is split {meta['split']!r}, not {split!r}")
        if meta["protocol_config"] != first["protocol_config"]:
            diff = sorted(
                k
                for k in meta["protocol_config"]
                if meta["protocol_config"].get(k) != first["protocol_config"].get(k)
            )
            raise UserError(
                f"merge: {f} ran a different protocol ({', '.join(diff)}) than {runs[0][0]}"
            )
        if meta.get("limit") != first.get("limit"):
            raise UserError(
                f"merge: {f} used --limit {meta.get('limit')}, {runs[0][0]} used {first.get('limit')}"
            )
        i, n_i = (int(x) for x in str(meta["shard"]).split("/"))
        if n_i != n:
            raise UserError(f"merge: {f} is shard {meta['shard']} but others are out of {n}")
        if i in seen_shards:
            raise UserError(f"merge: shard {i}/{n} given twice ({seen_shards[i]} and {f})")
        seen_shards[i] = f
    absent = [i for i in range(n) if i not in seen_shards]
    if absent and not allow_missing:
        raise UserError(
            f"merge: shards {absent} of {n} are missing (pass --allow-missing to count "
            f"their samples as errors)"
        )
    expected: list[str] = []
    results: dict[str, dict] = {}
    duplicates: list[str] = []
    foreign = 0
    for _, meta, results_file in runs:
        assigned = list(meta["assigned"])
        expected.extend(assigned)
        wanted = set(assigned)
        if not results_file.is_file():
            continue
        for r in read_results(results_file):
            if r["id"] not in wanted:
                foreign += 1
                continue
            if r["id"] in results:
                duplicates.append(r["id"])
                continue
            results[r["id"]] = r
    total = (
        first["n_split"] if first.get("limit") is None else min(first["limit"], first["n_split"])
    )
    for i in absent:  # an absent shard's ids are unknown, but its size is not
        expected.extend(f"<shard {i}/{n} sample {k}>" for k in range(len(range(i, total, n))))
    missing = [i for i in expected if i not in results]
    if missing and not allow_missing:
        raise UserError(
            f"merge: {len(missing)} assigned samples have no result (first: {missing[0]!r}); "
            f"finish those shards with --resume, or pass --allow-missing"
        )
    order = {sid: k for k, sid in enumerate(expected)}
    merged = sorted(results.values(), key=lambda r: (r.get("index", 0), order[r["id"]]))
    filled = merged + [_missing_result(sid, 10**9 + order[sid], split) for sid in missing]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "results.jsonl", "w", encoding="utf-8") as fh:
        for r in merged:
            fh.write(json.dumps(r, ensure_ascii=False, default=str) + "\n")
    metrics = summarize_results(split, filled)
    previous = {}
    summary_file = runs[0][0].with_name("summary" + runs[0][0].name[len("run") :])
    if summary_file.is_file():
        previous = json.loads(summary_file.read_text())
    variant = previous.get("variant", DEFAULT_VARIANT)
    summary = {
        "benchmark": split,
        "variant": variant,
        "headline": metrics["variants"][variant],
        "metrics": metrics,
        "n_split": first.get("n_split"),
        "n_assigned": len(expected),
        "shards": {"n": n, "merged": sorted(seen_shards), "absent": absent},
        "complete": not missing and not absent,
        "missing": missing,
        "duplicates": duplicates,
        "foreign_results": foreign,
        "protocol": previous.get("protocol"),
        "merged_from": [str(f) for f, _, _ in runs],
    }
    write_json_atomic(out / "summary.json", summary)
    return summary
