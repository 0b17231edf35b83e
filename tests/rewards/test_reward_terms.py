"""A new reward term is one edit: the reward breakdown owns the list of its terms
(``RewardBreakdown.TERMS``), and the step metrics, the episode log and dump, the viewer's page
and the progress line all iterate it. The test adds a term the way a developer would (a field
and its ``TERMS`` entry) and finds it everywhere without touching those places."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import ClassVar

from paravt.rewards import RewardBreakdown
from paravt.rewards.compose import RewardTerm
from paravt.schema.episodes import EpisodeRecord
from paravt.train.episode_dump import dump_episodes
from paravt.train.metrics import episode_stats, step_metrics
from paravt.train.progress import progress_line
from paravt.viewer.render import _reward_section


@dataclass
class WithBrevity(RewardBreakdown):
    """The breakdown with one more term, as a new term is added: a field and its entry."""

    brevity: float = 0.0

    TERMS: ClassVar[tuple[RewardTerm, ...]] = (
        *RewardBreakdown.TERMS[:-1],
        RewardTerm("brevity", "a bonus for short answers"),
        RewardBreakdown.TERMS[-1],
    )


def _record() -> EpisodeRecord:
    return EpisodeRecord("e0", "v.mp4", "q", "mcq", ["a", "b"], "A", "parallel", "frames")


def test_the_terms_are_listed_once_in_the_order_every_report_shows():
    assert RewardBreakdown.names() == ("acc", "fmt", "anchor", "tool", "total")
    b = RewardBreakdown(acc=1.0, fmt=0.5, anchor=0.2, tool=0.8, total=2.3)
    assert list(b.terms()) == list(RewardBreakdown.names())


def test_a_new_term_reaches_metrics_logs_dump_page_and_progress(tmp_path):
    b = WithBrevity(acc=1.0, fmt=0.5, anchor=0.2, tool=0.8, total=2.6, brevity=0.3)
    assert list(b.terms()) == ["acc", "fmt", "anchor", "tool", "brevity", "total"]
    # step metrics: reward/brevity beside the others, a failed episode left out of the mean
    stats = [episode_stats(_record(), b, 4, 10, 20), episode_stats(_record(), None, 4, 0, 0)]
    m = step_metrics(stats, 0.0, [4])
    assert m["reward/brevity"] == 0.3 and m["reward/acc"] == 1.0
    assert math.isnan(stats[1]["acc"])
    # the episode dump (and the episode log, which writes the same terms())
    dump_episodes(tmp_path, 1, 0, [(_record(), b, 4, 0.5)], 32, 10**7)
    (line,) = (tmp_path / "dump-rank0.jsonl").read_text().splitlines()
    assert json.loads(line)["reward"]["brevity"] == 0.3
    # the viewer's page of the episode
    html = _reward_section({"reward": b.terms(), "k": 4, "advantage": 0.5})
    assert "<td>brevity</td><td>0.300</td>" in html
    # the live progress line, from the logged metrics
    line = progress_line(3, 10, m, 2.0)
    assert "brevity 0.30" in line and "acc 1.00" in line
