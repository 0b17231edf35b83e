"""Episodes that advance on their own (``engine.schedule=episodes``, ``paravt.agent.async_engine``)
write the records the synchronous rounds write, and do advance on their own.

The backends are real: the scripted one in token space around the tiny Qwen3-VL processor (its
script has parallel calls, a malformed block, a window outside the video, calls over the cap and
the forced answer), wrapped so that it generates asynchronously with a per-episode delay, and the
tiny random Qwen3-VL through the hf backend, greedy. Videos and tools are real.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging

import pytest
from agent_helpers import call, record_view, small_config

from paravt.agent.backend import BackendBase
from paravt.agent.engine import EpisodeEngine
from paravt.backends.scripted import ScriptedBackend
from paravt.errors import ConfigError
from paravt.schema.episodes import EpisodeInput

OPTIONS = ["He flips a pancake", "He opens a door"]


def _script(n_calls: int) -> list[str]:
    """Two tool turns, then the forced answer; turn 0 has ``n_calls`` windows plus a malformed
    block and a window outside the video."""
    windows = "\n".join(call(i, i + 2) for i in range(n_calls))
    bad = '<tool_call>{"name": "crop_video", "arguments": {"start_time": 2 "end_time": 4}}</tool_call>'
    return [
        f"<think>Look around.</think>\n{windows}\n{bad}\n{call(50, 60)}",
        "<think>Once more.</think>\n" + call(7, 9),
        "<think>Enough.</think>\nHe flips a pancake",
    ]


SCRIPTS = {"a": _script(1), "b": _script(2), "c": _script(3), "d": ["<answer>A</answer>"]}


def _inputs(pancake, bunny) -> list[EpisodeInput]:
    videos = {"a": pancake, "b": bunny, "c": pancake, "d": bunny}
    return [EpisodeInput(k, v, "What does he do?", OPTIONS, "mcq") for k, v in videos.items()]


class _Async(BackendBase):
    """A scripted backend that generates asynchronously: each request of episode ``e`` takes
    ``delays[e]`` seconds, and every start and end of a generation is logged. ``hold``: episode
    ``a``'s first turn waits until these ``(episode, turn)`` generations have ended (at most 120 s:
    an engine that waited for ``a`` would otherwise hang here)."""

    def __init__(self, inner: ScriptedBackend, delays: dict[str, float], hold=()):
        self.inner, self.delays, self.hold = inner, delays, set(hold)
        self.codec = inner.codec
        self.events: list[tuple[str, str, int]] = []
        self.in_flight = self.most_in_flight = 0
        self.released: asyncio.Event | None = None

    async def agenerate(self, req):
        self.events.append(("start", req.episode_id, req.turn))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(self.delays.get(req.episode_id.split("/")[0], 0.0))
        if self.hold and (req.episode_id, req.turn) == ("a", 0):
            self.released = self.released or asyncio.Event()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.released.wait(), 120)
        self.in_flight -= 1
        self.events.append(("end", req.episode_id, req.turn))
        if self.hold and self.hold <= {(e, t) for kind, e, t in self.events if kind == "end"}:
            self.released = self.released or asyncio.Event()
            self.released.set()
        return self.inner.generate([req])[0]

    def generate(self, requests):
        return self.inner.generate(requests)


def _run(backend, schedule: str, inputs, **kw):
    engine = EpisodeEngine(
        backend, small_config(max_turns=2, max_parallel=3, schedule=schedule, **kw)
    )
    return engine, engine.run(inputs)


@pytest.mark.parametrize("evidence", ["frames", "subagent"])
def test_episodes_on_their_own_write_the_records_of_the_rounds(
    q3_processor, pancake, bunny, evidence
):
    inputs = _inputs(pancake, bunny)
    rounds = ScriptedBackend(SCRIPTS, processor=q3_processor, logprobs=True)
    _, want = _run(rounds, "rounds", inputs, evidence=evidence)
    # a slow first episode: its first turn comes back only once b's and c's first turns have
    # ended, so the others overtake it and their turns and tool passes interleave (a hold, not a
    # delay: under load a 0.3 s delay let the others start one at a time)
    alone = _Async(
        ScriptedBackend(SCRIPTS, processor=q3_processor, logprobs=True),
        {},
        hold=[("b", 0), ("c", 0)],
    )
    engine, got = _run(alone, "auto", inputs, evidence=evidence)  # auto: agenerate -> episodes
    assert engine.episodes_advance_alone()
    assert [r.id for r in got] == ["a", "b", "c", "d"]  # input order, whatever finished first
    assert [r.status for r in got] == ["ok"] * 4, [r.error for r in got]
    for w, g in zip(want, got, strict=True):
        assert record_view(g) == record_view(w), g.id
    assert got[2].tool_counts.executed_ok == 4 and got[2].tool_counts.over_cap == 1
    if evidence == "subagent":
        assert len(got[2].subagents) == 4 and got[2].subagents[0].turns
    # the rounds made one generate call per round; alone, every request went on its own
    assert len(rounds.batches) == 3 + (2 if evidence == "subagent" else 0)
    assert all(len(b) == 1 for b in alone.inner.batches)
    assert alone.most_in_flight >= 2  # a, held, beside each of b's and c's first turns
    assert alone.events.index(("end", "b", 0)) < alone.events.index(("end", "a", 0))


def test_an_episode_whose_tools_returned_does_not_wait_for_a_slow_one(q3_processor, pancake, bunny):
    """Episode ``a``'s first turn comes back only once ``b`` and ``c`` have gone through all three
    of their turns (and both tool passes): in rounds they would wait for it, and it for them."""
    hold = [("b", 2), ("c", 2)]
    backend = _Async(ScriptedBackend(SCRIPTS, processor=q3_processor), {}, hold=hold)
    engine, recs = _run(backend, "episodes", _inputs(pancake, bunny))
    assert all(r.status == "ok" for r in recs)
    before = backend.events[: backend.events.index(("end", "a", 0))]
    for ep, turn in hold:
        assert ("end", ep, turn) in before, backend.events  # its forced answer, already
    # tool passes ran while ``a`` was generating: more passes than the rounds' two
    assert len(engine.tool_stats) > 2


def test_a_sync_backend_runs_on_its_own_too_and_hf_agrees_greedy(tiny_qwen3_dir, pancake, bunny):
    """The hf backend has no ``agenerate``: ``auto`` keeps rounds, ``episodes`` sends it one
    request at a time from a thread. Greedy, one request per batch in both (left padding would
    change the float sums), the records are equal token for token."""
    from paravt.backends.hf import HFBackend

    hf = HFBackend.from_pretrained(str(tiny_qwen3_dir), device="cpu", batch_size=1)
    prefix = "<think>look</think>" + call(0, 3) + call(4, 6)
    kw = {"max_new_tokens": 6, "forced_tokens_mcq": 5, "think_prefix": prefix}
    inputs = _inputs(pancake, bunny)[:3]
    cfg = small_config(max_turns=1, **kw)
    assert not EpisodeEngine(hf, cfg).episodes_advance_alone()
    want = EpisodeEngine(hf, cfg).run(inputs)
    got = EpisodeEngine(hf, dataclasses.replace(cfg, schedule="episodes")).run(inputs)
    assert all(r.status == "ok" and r.calls[0].status == "ok" for r in got), [r.error for r in got]
    for w, g in zip(want, got, strict=True):
        assert record_view(g) == record_view(w), g.id


def test_inside_a_running_event_loop_and_a_lockstep_backend_is_refused(
    q3_processor, pancake, bunny
):
    inputs = _inputs(pancake, bunny)
    backend = _Async(ScriptedBackend(SCRIPTS, processor=q3_processor), {})

    async def from_a_notebook():  # a caller that runs a loop already: no "loop is running" error
        return _run(backend, "episodes", inputs)[1]

    recs = asyncio.run(from_a_notebook())
    assert [r.prediction for r in recs] == ["He flips a pancake"] * 3 + ["A"]
    backend.lockstep = True  # a sharded policy: every rank joins every forward
    assert not EpisodeEngine(backend, small_config(schedule="auto")).episodes_advance_alone()
    with pytest.raises(ConfigError, match="schedule=episodes.*lockstep"):
        _run(backend, "episodes", inputs)
    with pytest.raises(
        ConfigError, match="schedule='sometimes': use 'auto', 'rounds' or 'episodes'"
    ):
        small_config(schedule="sometimes")


def test_a_closed_policy_gate_stops_the_rollout_instead_of_failing_its_episodes(
    q3_processor, pancake, bunny, caplog
):
    """Bounded staleness stops its producer by closing the policy gate (``paravt.rollout.gate``,
    at the end of a run or after a failed push): every request after that raises
    ``GateClosedError``. That ends the engine's run, which the producer takes as its stop; it is
    not one more failed generation per episode, each written as an error record with a
    traceback in the log (what the end of every k >= 1 run logged before)."""
    from paravt.rollout.gate import GateClosedError, PolicyGate

    gate = PolicyGate(0)

    class Gated(_Async):
        async def agenerate(self, req):
            with gate.turn():
                gen = await super().agenerate(req)
            gate.close()  # the run ends once the first generation is back
            return gen

    backend = Gated(ScriptedBackend(SCRIPTS, processor=q3_processor), {})
    with caplog.at_level(logging.WARNING), pytest.raises(GateClosedError):
        _run(backend, "episodes", _inputs(pancake, bunny))
    assert not [r for r in caplog.records if "generation failed" in r.getMessage()]
