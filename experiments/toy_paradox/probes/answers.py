"""Where a toy mcq answer goes wrong: perception, copying the options, or the lookup.

Reads an eval folder's ``results.jsonl`` (``paravt eval --benchmark jsonl`` on the toy split)
and splits each answer along the oracle's final think (the option lines restated, then "The red
square is option B."; before the drill, "The windows frames show a red square." came first):

- ``colour_right``: the colour named is the needle's (``sample.meta.colour``);
- ``options_copied``: the restated option lines equal the question's;
- ``lookup_consistent``: the letter named is the one the model's own restated list gives its
  colour (the lookup itself, whatever the copy);
- ``correct``: the answer scored right, as stored when the eval ran;
- ``correct_now``: the prediction read again with the current answer rules
  (``answer_text`` + ``extract_mcq_letter``), e.g. for results scored before a rule changed;
- ``open_think``: answer turns that leave a ``<think>`` open, by the reward's own rule
  (``open_think_turns``): kept in ``answers.json`` so the count survives ``slim.py``.

    python experiments/toy_paradox/probes/answers.py OUT/eval/sft-strong-4 [...]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from paravt.rewards import answer_text, open_think_turns
from paravt.rewards.answers import extract_mcq_letter

COLOUR = re.compile(r"show a (\w+) square")
#: an option line as the question writes it, or in the key form "A. blue=A"
OPTION = re.compile(r"^([A-J])\. (\w+)(?:=[A-J])?$", re.MULTILINE)
#: the match line: "The square is red=B.", or the older "The red square is option B." / "red is B."
MATCH = re.compile(
    r"^(?:The square is (\w+)=([A-J])|(?:The )?(\w+)(?: square)? is (?:option )?([A-J]))\.",
    re.MULTILINE,
)


def breakdown(folder: Path) -> dict:
    rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
    return {"eval": str(folder), **breakdown_rows(rows)}


def breakdown_rows(rows: list[dict]) -> dict:
    """The counts above over an eval's ``results.jsonl`` rows."""
    counts = dict.fromkeys(
        ("colour_right", "options_copied", "lookup_consistent", "correct", "correct_now",
         "open_think"), 0
    )  # fmt: skip
    for row in rows:
        text, sample = row.get("prediction") or "", row["sample"]
        colour = COLOUR.search(text)
        written = OPTION.findall(text)
        # a turn that lists no options is matched against the question's own
        listed = written or list(zip("ABCDEFGHIJ", sample["options"], strict=False))
        match = MATCH.search(text)
        named, letter = (
            (match.group(1, 2) if match.group(1) else match.group(3, 4)) if match else ("", "")
        )
        # the colour as first named: "show a red square" (the older oracle), else the match line
        seen = colour.group(1) if colour else named
        counts["colour_right"] += seen == sample["meta"]["colour"]
        counts["options_copied"] += written == list(
            zip("ABCDEFGHIJ", sample["options"], strict=False)
        )
        counts["lookup_consistent"] += bool(match and dict(listed).get(letter) == named)
        counts["correct"] += (row.get("score") or {}).get("correct") == 1.0
        letter = extract_mcq_letter(answer_text(text), sample["options"])
        counts["correct_now"] += letter == sample["answer"]
        counts["open_think"] += open_think(text)
    return {"n": len(rows), **counts}


def open_think(prediction: str) -> bool:
    """Whether an episode's turns leave a think open (the 5 Dec collapse at K = 64)."""
    return any(open_think_turns(prediction))


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(json.dumps(breakdown(Path(arg))))
