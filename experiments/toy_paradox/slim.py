"""Slim a results folder to the small files that the guide's and the log's numbers are checked
against.

    python experiments/toy_paradox/slim.py experiments/toy_paradox/results/NEW_RUN

Run it on a run folder copied under ``results/`` before committing it (the committed folders
went through it once). What it does:

- each eval's ``results.jsonl`` (every episode's raw record, ~1 KB a question) becomes an
  ``answers.json`` beside it: the ``probes/answers.py`` counts and one line per question (id,
  gold letter, the needle's colour, the answer text, scored right or not); then it is removed.
  ``paravt eval`` writes the full file again when the log's command is rerun;
- ``configs/`` folders (``run`` writes them again into ``OUT/configs``) and shell scripts (their
  commands are in the log, LOG.md) are removed;
- absolute paths in the remaining text files are made relative: a run folder ``/work/runs/X``
  becomes ``runs/X``, a checkout of this repository becomes the repository root (``''``), the
  shared test media ``../shared/``, ``/tmp/X`` becomes ``tmp/X`` and a tool installed under
  ``/root`` its name alone.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "probes"))
from answers import breakdown_rows  # noqa: E402 - the probes folder is not a package

#: (absolute prefix, relative replacement), tried in order
PATHS = [
    (re.compile(r"/work/runs/"), "runs/"),
    (re.compile(r"/work/shared/"), "../shared/"),
    (re.compile(r"/work/probe/"), "experiments/toy_paradox/probes/"),
    (re.compile(r"/work/(?:main|wt[\w-]*)/"), ""),
    (re.compile(r"(?<![\w.])/tmp/"), "tmp/"),
    (re.compile(r"/root/(?:[^/\"\s]+/)*"), ""),  # an installed tool: its name alone
]
TEXT = {".json", ".jsonl", ".yaml", ".yml", ".log", ".txt"}


#: the columns of an ``answers.json`` question line
COLUMNS = ["id", "gold", "colour", "answer", "correct"]


def answers_table(rows: list[dict]) -> dict:
    """The answers.py counts and a one-line-per-question table of an eval's rows."""
    table = []
    for row in rows:
        sample = row.get("sample") or {}
        colour = (sample.get("meta") or {}).get("colour")
        score = (row.get("score") or {}).get("correct")
        table.append([row.get("id"), sample.get("answer"), colour, row.get("answer_text"), score])
    return {**breakdown_rows(rows), "columns": COLUMNS, "questions": table}


def dumps_table(table: dict) -> str:
    """JSON with one question a line (a diff shows which answers changed)."""
    head = {k: v for k, v in table.items() if k != "questions"}
    lines = ",\n".join("  " + json.dumps(q) for q in table["questions"])
    return json.dumps(head)[:-1] + ', "questions": [\n' + lines + "\n]}\n"


def relative(text: str) -> str:
    for pattern, repl in PATHS:
        text = pattern.sub(repl, text)
    return text


def slim(root: Path) -> dict:
    counts = {"answers_written": 0, "removed": 0, "rewritten": 0}
    for raw in sorted(root.rglob("*results.jsonl")):
        rows = [json.loads(line) for line in raw.read_text().splitlines() if line.strip()]
        if rows and "sample" in rows[0]:
            name = raw.name.replace("results.jsonl", "answers.json")
            (raw.parent / name).write_text(dumps_table(answers_table(rows)))
            counts["answers_written"] += 1
        raw.unlink()
        counts["removed"] += 1
    for folder in sorted(p for p in root.rglob("configs") if p.is_dir()):
        counts["removed"] += sum(1 for f in folder.rglob("*") if f.is_file())
        shutil.rmtree(folder)
    for script in sorted(root.rglob("*.sh")):
        script.unlink()
        counts["removed"] += 1
    for path in sorted(p for p in root.rglob("*") if p.suffix in TEXT and p.is_file()):
        text = path.read_text()
        new = relative(text)
        if new != text:
            path.write_text(new)
            counts["rewritten"] += 1
    return counts


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(arg, json.dumps(slim(Path(arg))))
