"""Bounded staleness, the parts without a model: the gate around pushes, the producer's lead and
order, and which groups are too old (``paravt.rollout.gate``, ``producer``, ``staleness``)."""

from __future__ import annotations

import threading
import time

import pytest

from paravt.rollout.gate import GateClosedError, PolicyGate
from paravt.rollout.producer import RolloutProducer, step_batches
from paravt.rollout.staleness import StalenessLog, episode_staleness, groups_to_drop
from paravt.schema.episodes import EpisodeRecord, TurnRecord


def test_a_push_never_waits_for_running_turns_and_they_keep_their_start_version():
    """A request that started under version 0 goes on across the push (the push does not wait
    for it: before, it did, and the pipeline drained at every push) and keeps version 0, the
    oldest weights any of its tokens can come from; a request that asks during the push waits
    and starts under version 1. The gate counts the turn that crossed the push."""
    gate = PolicyGate(0)
    seen: list[tuple[str, int, int]] = []  # (who, version at start, gate version at end)
    inside, release = threading.Event(), threading.Event()

    def request(name: str, hold: threading.Event | None) -> None:
        with gate.turn() as v:
            inside.set()
            if hold is not None:
                hold.wait(5)
            seen.append((name, v, gate.version))

    first = threading.Thread(target=request, args=("running", release))
    first.start()
    inside.wait(5)
    t0 = time.perf_counter()
    assert gate.pause(timeout_s=5) == 1  # returns at once: one turn crosses the push
    assert time.perf_counter() - t0 < 1.0 and seen == []
    late = threading.Thread(target=request, args=("late", None))
    late.start()
    time.sleep(0.05)
    assert seen == []  # the late request waits for the push
    gate.resume(1)
    late.join(5)
    release.set()
    first.join(5)
    assert seen == [("late", 1, 1), ("running", 0, 1)]
    assert gate.crossed == 1


def test_a_closed_gate_refuses_new_turns_and_wakes_waiters():
    gate = PolicyGate(0)
    woke = []
    t = threading.Thread(target=lambda: woke.append(gate.wait_for_version(5)))
    t.start()
    time.sleep(0.05)
    gate.close()
    t.join(5)
    assert woke == [False]
    with pytest.raises(GateClosedError), gate.turn():
        pass


def _producer(lead: int, gate: PolicyGate, started: list, start: int = 0, fail_at=None):
    batches = ((0, [{"prompt_id": f"p{i}"}]) for i in range(start, start + 50))

    def run(rows, epoch):
        index = int(rows[0]["prompt_id"][1:])
        started.append((index, gate.version))
        if index == fail_at:
            raise ConnectionError(f"server gone at step {index}")
        return [f"in{index}"], [f"rec{index}"]

    return RolloutProducer(batches, run, gate, lead=lead, start=start)


@pytest.mark.parametrize("lead", [1, 2])
def test_the_producer_runs_at_most_lead_steps_ahead_and_hands_out_in_order(lead):
    """Step ``s`` starts only once the policy is at ``s - lead``: with the learner held at
    version 0, exactly steps 0..lead are produced; each version bump lets one more start."""
    gate = PolicyGate(0)
    started: list[tuple[int, int]] = []
    producer = _producer(lead, gate, started)
    producer.start()
    time.sleep(0.3)
    assert [i for i, _ in started] == list(range(lead + 1))
    for step in range(4):
        got = producer.take(step, timeout_s=5)
        assert got.index == step and got.records == [f"rec{step}"]
        assert step - got.started_at_version <= lead
        gate.pause(timeout_s=5)
        gate.resume(step + 1)  # the learner's push after step ``step``
        time.sleep(0.1)
        assert max(i for i, _ in started) == step + 1 + lead
    assert all(index - version <= lead for index, version in started)
    producer.close()


def test_the_next_step_starts_while_the_current_step_still_runs():
    """Step 1's rollout starts while step 0's last episodes still run (before, the producer ran
    one step's rollout at a time: the server ran below its batch at every step's tail), and the
    steps are still handed out in order."""
    gate = PolicyGate(0)
    step1_started, order = threading.Event(), []

    def run(rows, epoch):
        index = int(rows[0]["prompt_id"][1:])
        order.append(("start", index))
        if index == 0:  # step 0's slowest episode: it ends only once step 1 has started
            assert step1_started.wait(5), "step 1 did not start while step 0 ran"
        else:
            step1_started.set()
        order.append(("end", index))
        return [f"in{index}"], [f"rec{index}"]

    batches = iter([(0, [{"prompt_id": f"p{i}"}]) for i in range(2)])
    producer = RolloutProducer(batches, run, gate, lead=1, start=0)
    producer.start()
    assert producer.take(0, timeout_s=10).records == ["rec0"]
    gate.resume(1)
    assert producer.take(1, timeout_s=10).records == ["rec1"]
    assert order.index(("start", 1)) < order.index(("end", 0))
    producer.close()


def test_a_failed_rollout_is_raised_in_the_learner_with_its_own_type():
    gate = PolicyGate(0)
    producer = _producer(1, gate, [], fail_at=1)
    producer.start()
    assert producer.take(0, timeout_s=5).index == 0
    gate.resume(1)
    with pytest.raises(ConnectionError, match="server gone at step 1"):
        producer.take(1, timeout_s=5)
    producer.close()


def test_a_resumed_producer_starts_at_its_step():
    gate = PolicyGate(7)
    started: list = []
    producer = _producer(2, gate, started, start=7)
    producer.start()
    assert producer.take(7, timeout_s=5).rows == [{"prompt_id": "p7"}]
    producer.close()


def test_step_batches_take_one_item_per_generation_across_epochs():
    """TRL's repeat sampler gives each generation batch ``every`` times in a row; an epoch is a
    pass over the loader, and ``start`` skips the steps a resumed run has taken."""

    class Loader:
        def __init__(self):
            self.epochs = []

        def set_epoch(self, e):
            self.epochs.append(e)

        def __iter__(self):
            e = self.epochs[-1]
            for g in range(3):  # three generations a pass, each repeated twice
                yield from ([f"e{e}g{g}"], [f"e{e}g{g}"])

    loader = Loader()
    got = step_batches(loader, every=2, start=2)
    assert [next(got) for _ in range(4)] == [
        (0, ["e0g2"]), (1, ["e1g0"]), (1, ["e1g1"]), (1, ["e1g2"])
    ]  # fmt: skip


def _record(versions: list[int | None], status: str = "ok") -> EpisodeRecord:
    rec = EpisodeRecord(
        id="e", video="v", question="q", question_type="mcq", options=None, gold="A",
        mode="parallel", evidence="frames", status=status,
    )  # fmt: skip
    rec.turns = [TurnRecord(index=i, text="", policy_version=v) for i, v in enumerate(versions)]
    return rec


def test_an_episode_is_as_old_as_its_oldest_sampled_turn():
    assert episode_staleness(_record([3, 3]), 5) == 2
    assert episode_staleness(_record([None, 4, 5]), 5) == 1  # a forced first turn has none
    assert episode_staleness(_record([None]), 5) is None  # sampled nothing we can date
    assert episode_staleness(_record([], status="error"), 5) == 0  # not learned from


def test_a_group_goes_whole_when_one_episode_is_too_old_or_undated():
    ages = [0, 1, 2, 3, None, 1, 1, 1]
    assert groups_to_drop(ages, 2, 2) == [False, False, True, True, True, True, False, False]
    assert groups_to_drop(ages[:4], 4, 3) == [False] * 4


def test_the_step_log_says_how_old_what_was_learned_from_is():
    m = StalenessLog(staleness=[0, 1, 2, 1], groups_dropped=1, episodes_regenerated=2).metrics()
    assert m["async/staleness_mean"] == 1.0 and m["async/staleness_max"] == 2.0
    assert m["async/share_one_or_more_back"] == 0.75
    assert m["async/groups_dropped"] == 1.0 and m["async/episodes_regenerated"] == 2.0
