"""Host memory stays flat at bounded staleness: 8 steps at ``max_staleness = 2`` against the
stand-in server (``standin_vllm``), the frame cache of the producer's requests and the process's
resident size read after every step.

Why: ``VLLMBackend`` turns each frame item into the PIL image vLLM takes once (an episode resends
its whole context every turn) and kept both, by strong reference, in a cache that only the
synchronous ``rollout()`` cleared; the producer's requests at k ≥ 1 never enter it. Measured on
this stand-in over 6 steps before the fix: 0 cached items after every step at k = 0, and 80,
108, 136, 162, 188, 210 at k = 2. The cache now holds each item by weak reference: an entry
lives as long as its episode does.

The bound: after step 2 the cache never holds more items than it did at step 2 plus one step's
worth of them (the producer runs up to k steps ahead, so what is alive at a step end varies with
timing by at most a step's episodes), and the resident size grows by at most 64 MB from step 2
to step 8 (one step's frames here are about 1 MB; before the fix the growth was linear in the
steps).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from standin_vllm import StandInServer
from transformers import TrainerCallback

RSS_SLACK_MB = 64.0


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


class CacheWatch(TrainerCallback):
    """After every optimizer step: the frame items the sampler's cache holds, and the RSS."""

    def __init__(self, trainer):
        self.trainer, self.items, self.rss = trainer, [], []

    def on_step_end(self, args, state, control, **kwargs):
        import gc

        gc.collect()  # what is unreachable is not what the test is about
        self.items.append(len(self.trainer._backend._images))
        self.rss.append(rss_mb())


@pytest.mark.slow
def test_k2_holds_the_frame_cache_and_rss_flat_over_8_steps(
    tmp_path, tiny_qwen3_dir, shared_videos, smoke_args
):
    from paravt.train.run import load_command_config, run_training

    server = StandInServer.for_model(tiny_qwen3_dir).start()
    watch: list[CacheWatch] = []
    try:
        cfg = load_command_config(
            "cpu-smoke",
            smoke_args(
                tmp_path / "k2", shared_videos, f"model={tiny_qwen3_dir}",
                "trainer.use_vllm=true", "trainer.vllm_mode=server",
                f"trainer.vllm_server_base_url={server.url}", "trainer.vllm_check_weights=false",
                "trainer.vllm_importance_sampling_mode=token_truncate", "trainer.max_steps=8",
                "trainer.save_steps=100", "trainer.max_staleness=2",
            ),
        )  # fmt: skip

        def attach(trainer):
            watch.append(CacheWatch(trainer))
            trainer.add_callback(watch[0])

        summary = run_training(cfg, on_trainer=attach)
    finally:
        server.stop()
    assert summary["global_step"] == 8
    items, rss = watch[0].items, watch[0].rss
    print("cached items per step", items, "rss MB per step", [round(r) for r in rss])
    assert len(items) == 8
    per_step = max(1, max(items[:2]))
    assert max(items[2:]) <= items[1] + per_step, items
    assert rss[-1] - rss[1] <= RSS_SLACK_MB, rss
