"""Bounded staleness end to end on the CPU: PARA-GRPO in server mode against a stand-in server
over real HTTP (``standin_vllm``: replies that depend on the prompt only), so a run at
``max_staleness = 2`` can be compared with the synchronous run step for step.

What must hold (issue: "Train the way the paper trained"):

- the producer changes when episodes are sampled, not which: the k = 2 run learns from the same
  prompts, K, token streams and losses as the k = 0 run;
- rollouts really ran ahead: some consumed episodes were sampled one version back or more, none
  more than k, each turn's version is in the episode log, one weight push per step;
- a group older than k is dropped, sampled again under the current weights, and counted;
- ``max_staleness`` outside server mode, or without the per-token correction, is refused with
  one line before any model loads.

The same against a real vLLM server: ``test_vllm_server_mode.py`` (marker ``vllm``).
"""

from __future__ import annotations

import math

import pytest
from producer_pace import learner_waits_for_producer
from standin_vllm import StandInServer

from paravt.errors import ConfigError


@pytest.fixture
def server(tiny_qwen3_dir):
    """``server()`` -> a fresh stand-in server of the tiny model (its own reply counters)."""
    started: list[StandInServer] = []

    def start() -> StandInServer:
        started.append(StandInServer.for_model(tiny_qwen3_dir).start())
        return started[-1]

    yield start
    for s in started:
        s.stop()


def _train(
    tmp_path, name, tiny_qwen3_dir, shared_videos, smoke_args, train_probe, url, *extra,
    wait_ahead=False, hooks=(),
):  # fmt: skip
    """A 4-step run against ``url``; ``wait_ahead``: each step but the last ends only once the
    producer holds a finished later rollout (``producer_pace``)."""
    from paravt.train.metrics import read_jsonl
    from paravt.train.run import load_command_config, run_training

    run_dir = tmp_path / name
    cfg = load_command_config(
        "cpu-smoke",
        smoke_args(
            run_dir, shared_videos, f"model={tiny_qwen3_dir}", "trainer.use_vllm=true",
            "trainer.vllm_mode=server", f"trainer.vllm_server_base_url={url}",
            "trainer.vllm_check_weights=false",
            "trainer.vllm_importance_sampling_mode=token_truncate", "trainer.max_steps=4",
            "trainer.save_steps=100", *extra,
        ),
    )  # fmt: skip
    probe = train_probe()
    hooks = [probe.attach, *hooks]
    if wait_ahead:
        hooks.append(lambda t: t.add_callback(learner_waits_for_producer(t)))
    summary = run_training(cfg, on_trainer=lambda t: [h(t) for h in hooks])
    metrics = [r for r in read_jsonl(run_dir / "metrics.jsonl") if "loss" in r]
    episodes = read_jsonl(run_dir / "episodes" / "rank0.jsonl")
    return summary, probe, metrics, episodes


def _steps(probe) -> list[list[tuple]]:
    """Per step, per group (in batch order): the prompt, its K, and the multiset of its
    episodes' generated token streams (the two generations of a group ask the same first
    prompt, and which of them the server answers first is a race)."""
    out = []
    for rollout in probe.rollouts:
        step = []
        for g in rollout["groups"]:
            streams = sorted(tuple(r.stream.token_ids[r.stream.prompt_len :]) for r in g.records)
            step.append((g.prompt_id, g.frames_k, tuple(streams)))
        out.append(step)
    return out


def test_k2_learns_from_the_same_episodes_as_the_synchronous_loop(
    tmp_path, tiny_qwen3_dir, shared_videos, smoke_args, train_probe, server
):
    sync_server, async_server = server(), server()
    s0, p0, m0, _ = _train(tmp_path, "k0", tiny_qwen3_dir, shared_videos, smoke_args,
                           train_probe, sync_server.url)  # fmt: skip
    s2, p2, m2, episodes = _train(tmp_path, "k2", tiny_qwen3_dir, shared_videos, smoke_args,
                                  train_probe, async_server.url, "trainer.max_staleness=2",
                                  wait_ahead=True)  # fmt: skip
    assert s0["global_step"] == s2["global_step"] == 4
    # the same prompts, K and token streams at every step, and the same losses
    assert _steps(p2) == _steps(p0)
    assert [r["step"] for r in m2] == [1, 2, 3, 4]
    for a, b in zip(m0, m2, strict=True):
        assert math.isclose(a["loss"], b["loss"], rel_tol=1e-5, abs_tol=1e-6), (a, b)
    assert any(abs(r["loss"]) > 0 for r in m2)  # reward spread: the loss moved the weights
    # the rollouts ran ahead: one version back or more, never more than k; a push a step
    ages = [r["async/staleness_max"] for r in m2]
    print(
        "staleness max per step", ages, "losses", [r["loss"] for r in m2], [r["loss"] for r in m0]
    )
    assert max(ages) >= 1 and max(ages) <= 2, ages
    assert all(r["async/groups_dropped"] == 0 for r in m2)
    assert len(async_server.reloads) == 4 and len(sync_server.reloads) == 4
    trainer = p2.trainer
    assert trainer._backend.gate is not None and trainer._async.producer is None  # closed
    # each turn's version is logged; a consumed episode's versions never exceed its step
    for e in episodes:
        versions = [v for v in e["policy_versions"] if v is not None]
        assert versions and max(versions) <= e["step"] - 1 and e["step"] - 1 - min(versions) <= 2
    assert "async/staleness_mean" not in m0[0]  # the synchronous loop logs no staleness
    # the turns a push found running are counted (they go on across it: paravt.rollout.gate)
    assert all(r["async/turns_across_push"] >= 0 for r in m2)


def test_k2_with_the_producer_in_a_process_learns_from_the_same_episodes(
    tmp_path, tiny_qwen3_dir, shared_videos, smoke_args, train_probe, server
):
    """``trainer.producer: process``: the sampling runs in a child process and the learner gets
    the same prompts, K, token streams and losses as the synchronous loop; the child is gone
    when the run ends."""
    sync_server, async_server = server(), server()
    s0, p0, m0, _ = _train(tmp_path, "k0", tiny_qwen3_dir, shared_videos, smoke_args,
                           train_probe, sync_server.url)  # fmt: skip
    s2, p2, m2, episodes = _train(tmp_path, "k2p", tiny_qwen3_dir, shared_videos, smoke_args,
                                  train_probe, async_server.url, "trainer.max_staleness=2",
                                  "trainer.producer=process", wait_ahead=True)  # fmt: skip
    assert s0["global_step"] == s2["global_step"] == 4
    assert _steps(p2) == _steps(p0)
    for a, b in zip(m0, m2, strict=True):
        assert math.isclose(a["loss"], b["loss"], rel_tol=1e-5, abs_tol=1e-6), (a, b)
    ages = [r["async/staleness_max"] for r in m2]
    assert max(ages) >= 1 and max(ages) <= 2, ages
    assert len(async_server.reloads) == 4
    child = p2.trainer._async.child
    assert child is not None and child.transfer_s  # the episodes came from the child
    assert not child.process.is_alive()
    assert p2.trainer._backend.alone_requests == 0  # the learner's process sampled nothing
    for e in episodes:
        versions = [v for v in e["policy_versions"] if v is not None]
        assert versions and max(versions) <= e["step"] - 1 and e["step"] - 1 - min(versions) <= 2


def test_a_rollout_process_that_dies_stops_the_run_with_one_line(
    tmp_path, tiny_qwen3_dir, shared_videos, smoke_args, train_probe, server
):
    """The producer's child is SIGKILLed after step 1: the run stops with one line that names
    the process and its exit code (no hang, no later step learns)."""
    import os
    import signal

    from transformers import TrainerCallback

    from paravt.train.launch.stopping import RunStopped

    steps: list[int] = []

    def kill_child(trainer) -> None:
        class Kill(TrainerCallback):
            def on_step_end(self, args, state, control, **kw):
                steps.append(state.global_step)
                if state.global_step == 1:
                    os.kill(trainer._async.child.pid, signal.SIGKILL)

        trainer.add_callback(Kill())

    with pytest.raises(RunStopped, match=r"rollout process \(pid \d+\) died") as err:
        _train(tmp_path, "dead", tiny_qwen3_dir, shared_videos, smoke_args, train_probe,
               server().url, "trainer.max_staleness=2", "trainer.producer=process",
               hooks=[kill_child])  # fmt: skip
    assert "\n" not in str(err.value) and "-9" in str(err.value)
    # at most the steps whose rollouts had reached the learner before the kill
    assert steps and max(steps) <= 3


def test_no_rollout_process_outlives_its_trainer(tmp_path, tiny_qwen3_dir, shared_videos, server):
    """A trainer killed (SIGKILL, no cleanup) with its rollout process running: the child is
    gone within seconds (it asked the kernel for SIGKILL when its parent dies)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    pid_file = tmp_path / "child.pid"
    worker = Path(__file__).with_name("producer_orphan_worker.py")
    proc = subprocess.Popen(
        [sys.executable, str(worker), str(tmp_path / "run"), str(shared_videos),
         str(tiny_qwen3_dir), str(pid_file), server().url],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 600
        while not pid_file.is_file() or not pid_file.read_text():
            assert proc.poll() is None, f"the trainer exited with {proc.returncode}"
            assert time.monotonic() < deadline, "the trainer never reached step 1"
            time.sleep(0.5)
        child = int(pid_file.read_text())
        assert _running(child)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        deadline = time.monotonic() + 20
        while _running(child) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _running(child), f"the rollout process {child} outlived its trainer"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


def _running(pid: int) -> bool:
    """``pid`` exists and is not a zombie."""
    from pathlib import Path

    status = Path(f"/proc/{pid}/status")
    try:
        text = status.read_text()
    except OSError:
        return False
    return "State:\tZ" not in text and "State:\tX" not in text


def test_a_group_older_than_k_is_sampled_again_and_counted(
    tmp_path, tiny_qwen3_dir, shared_videos, smoke_args, train_probe, server, monkeypatch
):
    """k = 1 with the producer let run 3 steps ahead (what a stalled learner would cause): the
    groups sampled 2 or 3 versions back are dropped on consumption and their episodes sampled
    again under the current weights; what the step learns from is never older than k."""
    from paravt.train import async_rollout

    widened = async_rollout.AsyncRollouts.__init__

    def wide(self, *args, **kwargs):
        widened(self, *args, **kwargs)
        self.lead = 3

    monkeypatch.setattr(async_rollout.AsyncRollouts, "__init__", wide)
    _, probe, metrics, episodes = _train(
        tmp_path, "k1", tiny_qwen3_dir, shared_videos, smoke_args, train_probe,
        server().url, "trainer.max_staleness=1",
    )  # fmt: skip
    dropped = sum(r["async/groups_dropped"] for r in metrics)
    again = sum(r["async/episodes_regenerated"] for r in metrics)
    assert dropped >= 1 and again == 2 * dropped  # groups of 2 generations
    assert all(r["async/staleness_max"] <= 1 for r in metrics)
    for rollout, e_step in zip(probe.rollouts, range(4), strict=True):
        for g in rollout["groups"]:
            assert all(e_step - v <= 1 for v in g.policy_versions)
    assert all(e["step"] - 1 - min(v for v in e["policy_versions"] if v is not None) <= 1
               for e in episodes)  # fmt: skip


def test_with_the_overlapped_push_every_turn_is_answered_by_the_weights_it_is_tagged_with(
    tmp_path, tiny_qwen3_dir, shared_videos, smoke_args, train_probe, server
):
    """k = 2 with the folder push's overlap (the default): ``push`` returns before the server
    has reloaded (2 s here, longer than a rollout's work before its first request: with 0.3 s
    requests that skip the wait still arrived after it), the gate resumes at the new version at
    once, and the producer's requests under it wait for the reload. The server tells which
    reload each request arrived after (``tag_loaded``): every turn tagged version v was sent
    after the reload of step-v and before the next (a push no longer waits for running turns,
    so a turn may end under the next weights; it keeps the version it started under), and no
    request came while a reload was under way."""
    standin = server()
    standin.reload_s, standin.tag_loaded = 2.0, True
    summary, probe, metrics, _ = _train(
        tmp_path, "overlap", tiny_qwen3_dir, shared_videos, smoke_args, train_probe,
        standin.url, "trainer.max_staleness=2", wait_ahead=True,
    )  # fmt: skip
    assert summary["global_step"] == 4
    push = probe.trainer.vllm_generation.push
    assert push.overlap and push.pushed == [0, 1, 2, 3]
    assert standin.loaded == 4 and standin.during_reload == 0
    tagged = [
        (step, t.policy_version, t.cached_tokens)
        for step, rollout in enumerate(probe.rollouts)
        for g in rollout["groups"]
        for r in g.records
        for t in r.turns
        if t.policy_version is not None
    ]
    assert tagged and all(loaded == v + 1 for _, v, loaded in tagged), tagged
    assert any(v < step for step, v, _ in tagged)  # some ran ahead of the learner
    assert max(r["async/staleness_max"] for r in metrics) <= 2


def test_a_failed_push_stops_the_run_with_one_line_and_the_producer_with_it(
    tmp_path, tiny_qwen3_dir, shared_videos, smoke_args, train_probe, server
):
    """The server takes the first two pushes and refuses the third: the run stops at step 3
    with one line (the push's ``WeightPushError``, naming the server, and where the run was
    saved), the producer's thread ends instead of sampling on weights the server does not
    hold, and no later step ran."""
    import threading

    from paravt.train.launch.stopping import RunStopped

    standin = server()
    standin.fail_reload_from = 2
    with pytest.raises(RunStopped, match=r"weight push of step 2 .* failed") as err:
        _train(tmp_path, "fail", tiny_qwen3_dir, shared_videos, smoke_args, train_probe,
               standin.url, "trainer.max_staleness=2", "trainer.vllm_server_retries=0")  # fmt: skip
    assert "\n" not in str(err.value) and standin.url in str(err.value)
    assert (tmp_path / "fail" / "checkpoint-2").is_dir()  # the last finished step, saved
    assert not [t for t in threading.enumerate() if t.name == "paravt-rollout"]
    # steps 0 and 1 pushed, step 2's push refused; nothing after it was tried
    assert [p.rsplit("/", 1)[-1] for p in standin.reloads] == ["step-0", "step-1", "step-2"]


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ((), "needs server mode"),
        (
            ("trainer.use_vllm=true", "trainer.vllm_mode=server",
             "trainer.vllm_importance_sampling_mode=sequence_mask"),
            "vllm_importance_sampling_mode=token_truncate",
        ),
        (
            ("trainer.use_vllm=true", "trainer.vllm_mode=server",
             "trainer.vllm_importance_sampling_mode=token_truncate",
             "trainer.steps_per_generation=2"),
            "one rollout per optimizer step",
        ),
    ],
)  # fmt: skip
def test_max_staleness_where_it_cannot_run_is_one_line_before_any_model_loads(
    tmp_path, shared_videos, smoke_args, extra, why
):
    from paravt.train.run import load_command_config, para_config

    with pytest.raises(ConfigError, match=why) as err:
        cfg = load_command_config(
            "cpu-smoke",
            smoke_args(tmp_path / "run", shared_videos, "trainer.max_staleness=2", *extra),
        )
        para_config(cfg)
    assert "\n" not in str(err.value)
