"""The server killed and restarted during a run at ``max_staleness = 2`` (the stand-in server,
``standin_vllm``, on the same port): the run waits out the outage, the restarted server is given
the step's weights, and every step trains, with no consumed episode older than k.

Why: at k ≥ 1 the producer's requests of later steps are in flight when the server dies and the
learner's next push meets a server that is down; the synchronous loop's kill test
(``test_vllm_kill.py``, real vLLM) does not cover that. Measured once while writing it: killed 2.1 s
into the run (during step 2's push), back 3 s later, the run finished its 4 steps, the restarted
server reloading step-1, step-2 and step-3.
"""

from __future__ import annotations

import logging
import threading

import pytest
from standin_vllm import StandInServer

KILL_AT_REQUEST = 12  # mid-run: the producer is a step or two ahead by then
DOWN_S = 3.0


@pytest.mark.slow
@pytest.mark.parametrize("producer", ["thread", "process"])
def test_k2_server_killed_and_restarted_mid_run_finishes_every_step(
    tmp_path, tiny_qwen3_dir, shared_videos, smoke_args, caplog, producer
):
    """``process``: the rollout process's pool meets the outage, and the learner's pool gives
    the restarted server the step's weights when the child asks (its ``rejoin``)."""
    from paravt.train.metrics import read_jsonl
    from paravt.train.run import load_command_config, run_training

    first = StandInServer.for_model(tiny_qwen3_dir).start()
    port = first.server_address[1]
    servers = [first]
    killed = threading.Event()

    def restart() -> None:
        servers.append(StandInServer.for_model(tiny_qwen3_dir, port=port).start())

    def kill() -> None:
        first.shutdown()
        first.server_close()
        killed.set()
        threading.Timer(DOWN_S, restart).start()

    reply = first.reply

    def counting(token_ids):
        out = reply(token_ids)
        if first.requests == KILL_AT_REQUEST:
            threading.Thread(target=kill).start()
        return out

    first.reply = counting
    run_dir = tmp_path / "run"
    held: list = []
    cfg = load_command_config(
        "cpu-smoke",
        smoke_args(
            run_dir, shared_videos, f"model={tiny_qwen3_dir}", "trainer.use_vllm=true",
            "trainer.vllm_mode=server", f"trainer.vllm_server_base_url={first.url}",
            "trainer.vllm_check_weights=false",
            "trainer.vllm_importance_sampling_mode=token_truncate", "trainer.max_steps=4",
            "trainer.save_steps=100", "trainer.max_staleness=2",
            "trainer.vllm_server_request_timeout_s=20", "trainer.vllm_server_retries=1",
            "trainer.vllm_outage_budget_s=60", f"trainer.producer={producer}",
        ),
    )  # fmt: skip
    caplog.set_level(logging.WARNING, logger="paravt.rollout.vllm_servers")
    try:
        summary = run_training(cfg, on_trainer=held.append)
    finally:
        for s in servers:
            if s is not first:
                s.stop()
        if not killed.is_set():
            first.stop()
    assert killed.is_set() and len(servers) == 2  # it died mid-run and came back
    assert summary["global_step"] == 4
    rows = [r for r in read_jsonl(run_dir / "metrics.jsonl") if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert max(r["async/staleness_max"] for r in rows) <= 2
    if producer == "thread":  # the child logs in its own process
        assert any("is down" in r.getMessage() for r in caplog.records)
    else:  # the child's pool met the outage and asked the learner's to let the server rejoin
        assert (first.url, "ok") in held[0]._async.child.rejoined, held[0]._async.child.rejoined
    # the restarted server was given the weights of the step in progress before it sampled
    assert servers[1].reloads and servers[1].reloads[0].rsplit("/", 1)[-1].startswith("step-")
