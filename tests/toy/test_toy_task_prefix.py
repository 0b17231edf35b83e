"""A toy set of N videos begins with the set of any smaller N: video i and its rows depend on
(seed, split, i) alone.

Why: the docs test runs ``paravt make-toy-task ... --n 1000`` with a smaller N
(tests/cli/test_doc_commands.py): the videos it makes are then the first ones the command as
written makes, byte for byte, and the full set only takes longer.
"""

from __future__ import annotations

import json

from paravt.toy.generate import make_toy_task
from paravt.toy.task import ToyTaskConfig


def _make(folder, n: int) -> list[dict]:
    make_toy_task(ToyTaskConfig(out=str(folder), n=n, seed=3, durations=[10],
                                needle_seconds=3.0, visibility_videos=0))  # fmt: skip
    return [json.loads(line) for line in (folder / "train.jsonl").read_text().splitlines()]


def test_the_first_videos_of_a_larger_set_are_the_smaller_set(tmp_path):
    small, large = _make(tmp_path / "small", 2), _make(tmp_path / "large", 3)
    assert len(large) > len(small)
    assert large[: len(small)] == small
    for row in small:
        video = row["video"]
        assert (tmp_path / "small" / video).read_bytes() == (
            tmp_path / "large" / video
        ).read_bytes()
