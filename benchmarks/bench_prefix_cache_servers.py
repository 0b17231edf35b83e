"""Prefix-cache hits of server-mode rollouts on one vLLM server against two.

Claim: routing every request of an episode to one server (``paravt.rollout.vllm_servers``:
sticky by episode id, GRPO's generations of one prompt sharing it) keeps the prefix cache's hits
with two servers where they are with one; spreading the same requests round robin loses them.

Workload: ``--prompts`` toy-task questions (``make-toy-task``, generated here) x ``--generations``
episodes each, all sharing their prompt's episode id as in training, through the episode engine
and ``VLLMBackend`` over a ``ServerPool``, each episode on its own (``engine.schedule`` auto),
temperature 1. An episode is two rounds: round 1 samples after a pre-filled ``crop_video`` call
(so it is a tool turn), its frames come back, round 2 is the forced answer over the whole
context. The model is a tiny random Qwen3-VL (``paravt.models.tiny``), served by vLLM on CPU
with ``--enable-prompt-tokens-details``, each server on one thread; every cache is reset before
each row. Rows:

- ``1 server``: the pool of one;
- ``2 servers, by episode``: the pool's routing;
- ``2 servers, round robin``: the same pool with ``sticky=False``.

Per row: prompt tokens and cached tokens summed over the sampled turns (round 1 and round 2
apart), the hit rate, and the requests each server took. Run from the vLLM environment
(``scripts/vllm-env.sh``):

    OMP_NUM_THREADS=1 VENV/bin/python benchmarks/bench_prefix_cache_servers.py

Output: ``benchmarks/results/bench_prefix_cache_servers.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
PREFILL = (
    "<think>\nI need to look at the start.</think>\n<tool_call>\n"
    '{"name": "crop_video", "arguments": {"video_path": "video", "start_time": 0, "end_time": 4}}'
    "\n</tool_call>"
)


class NoPush:
    """The servers keep the model folder's weights: nothing to push."""

    def push(self, step: int):
        from paravt.rollout.weight_push import Pushed

        return Pushed()


def _episodes(split: Path, prompts: int, generations: int) -> list:
    from paravt.schema.episodes import EpisodeInput

    rows = [json.loads(line) for line in (split / "train.jsonl").read_text().splitlines()]
    out = []
    for row in rows[:prompts]:
        for _ in range(generations):  # GRPO's generations share the prompt's id
            out.append(
                EpisodeInput(
                    id=str(row["id"]),
                    video=str(split / row["video"]),
                    question=row["question"],
                    options=row.get("options") or [],
                    question_type=row.get("question_type", "mcq"),
                    frames_k=4,
                    answer=row.get("answer"),
                )  # fmt: skip
            )
    return out


def _engine_config():
    from paravt.agent.config import CropSettings, EngineConfig

    budget = {"min_pixels": 4096, "max_pixels": 8192}
    return EngineConfig(
        mode="parallel", max_turns=1, max_parallel=1, frames=4, max_new_tokens=24,
        temperature=1.0, think_prefix=PREFILL, forced_tokens_mcq=24,
        crop=CropSettings(max_frames=2, **budget), **budget,
    )  # fmt: skip


def _row(name, servers, episodes, processor, sticky: bool) -> dict:
    from paravt.agent.engine import EpisodeEngine
    from paravt.rollout.vllm import VLLMBackend
    from paravt.rollout.vllm_server import ServerGeneration
    from paravt.rollout.vllm_server_client import VLLMServerClient
    from paravt.rollout.vllm_servers import ServerPool

    clients = [VLLMServerClient(s.base_url.removesuffix("/v1")) for s in servers]
    for c in clients:  # a cold start for every row
        for cache in ("prefix", "encoder", "mm"):
            c.call("POST", f"/reset_{cache}_cache")
    pool = ServerPool(clients, sticky=sticky)
    backend = VLLMBackend(ServerGeneration(pool, NoPush()), processor)
    banned = sorted(int(i) for i in processor.tokenizer.added_tokens_decoder)
    backend.generator.generation_kwargs.update(
        {"min_tokens": 24, "logit_bias": {t: -100.0 for t in banned}}
    )
    engine = EpisodeEngine(backend, _engine_config())
    t0 = time.perf_counter()
    with backend.rollout(0):
        records = engine.run(episodes)
    wall = time.perf_counter() - t0
    backend.close()
    pool.close()
    by_round: dict[int, dict] = {}
    for r in records:
        for t in r.turns:
            if t.forced and t.prompt_tokens == 0:
                continue
            d = by_round.setdefault(t.index, {"prompt": 0, "cached": 0, "turns": 0})
            d["prompt"] += t.prompt_tokens
            d["cached"] += t.cached_tokens
            d["turns"] += 1
    prompt = sum(d["prompt"] for d in by_round.values())
    cached = sum(d["cached"] for d in by_round.values())
    return {
        "row": name,
        "episodes": len(records),
        "errors": sum(r.status != "ok" for r in records),
        "prompt_tokens": prompt,
        "cached_tokens": cached,
        "hit_rate": round(cached / max(1, prompt), 4),
        "by_round": {
            str(k): {**v, "hit_rate": round(v["cached"] / max(1, v["prompt"]), 4)}
            for k, v in sorted(by_round.items())
        },
        "requests_per_server": [c.requests for c in clients],
        "wall_s": round(wall, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--generations", type=int, default=4)
    ap.add_argument("--out", type=Path, default=RESULTS / "bench_prefix_cache_servers.json")
    a = ap.parse_args()

    from transformers import AutoProcessor

    from paravt.eval.agreement import ServeSettings, VLLMServe
    from paravt.models.tiny import make_tiny_model
    from paravt.toy.generate import make_toy_task
    from paravt.toy.task import ToyTaskConfig

    work = Path(tempfile.mkdtemp(prefix="paravt-bench-prefix-"))
    model = make_tiny_model(work / "model", arch="qwen3-vl")
    processor = AutoProcessor.from_pretrained(model)
    split = work / "toy"
    make_toy_task(
        ToyTaskConfig(out=str(split), n=a.prompts, seed=3, visibility_videos=0,
                      question_types=["mcq"], durations=[20])
    )  # fmt: skip
    episodes = _episodes(split, a.prompts, a.generations)
    settings = ServeSettings(server="vllm", threads=1, startup_timeout_s=900, trl=True)
    load0 = os.getloadavg()
    with (
        VLLMServe(str(model), settings, str(work / "a.log")) as one,
        VLLMServe(str(model), settings, str(work / "b.log")) as two,
    ):
        rows = [
            _row("1 server", [one], episodes, processor, sticky=True),
            _row("2 servers, by episode", [one, two], episodes, processor, sticky=True),
            _row("2 servers, round robin", [one, two], episodes, processor, sticky=False),
        ]
    for r in rows:
        print(json.dumps(r))
    out = {
        "rows": rows,
        "prompts": a.prompts,
        "generations": a.generations,
        "model": "tiny random Qwen3-VL (paravt.models.tiny), vLLM on CPU, float32",
        "loadavg_before_after": [round(load0[0], 2), round(os.getloadavg()[0], 2)],
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "command": "OMP_NUM_THREADS=1 VENV/bin/python benchmarks/bench_prefix_cache_servers.py",
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
