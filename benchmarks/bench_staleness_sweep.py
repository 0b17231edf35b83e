"""Steps an hour at max_staleness k, where rollout and learning are of a size you choose.

Claim under test: with bounded staleness a step costs about T* = P + max(R, L + R_cpu) instead of
P + R + L (P the push, R the rollout, L the learning, R_cpu the rollout's CPU work on the
learner's process), so at ρ = R / L = 1, k = 1 reaches about 1.8× the steps an hour of k = 0.
``bench_async_steps.py`` could not tell: on the toy its rollout is a tenth of its learning.

How: identical work at every k. The trainer is ``paravt train`` on the cpu-smoke recipe (tiny
random Qwen3-VL, ``builtin:toy``, 2 prompts × 2 episodes a step), in server mode against a
stand-in server (``tests/train/standin_vllm.py``) whose replies depend on the prompt only, with a
*token clock*: each reply is held Δ0 + Δ1·b seconds a token, b the requests in flight, for a turn
length drawn (from the prompt's hash, so the same at every k) from the ``paper`` workload of
``bench_rollout.py`` (log-normal, median 112 tokens). The reply itself stays the stand-in's short
answer, so the learner's work is the same at every k; the clock sleeps (near zero CPU). Δ0 is set
from two k = 0 calibration runs (Δ0 = 0 and a probe) so that R ≈ ρ·L.

Per run and step: the step's wall, the learner's rollout segment (``ParaGRPOTrainer._rollout``:
at k = 0 push + rollout; at k ≥ 1 push + wait for the producer + the age check), the push and wait
(``async/push_s``, ``async/wait_s``), learning L (the step's wall less the rollout segment),
and the server's occupancy (share of the run's wall with a request in flight). Summary per k:
steps an hour over steps 2..N, L's inflation against k = 0, and the bound 3600 / T* from the
k = 0 run's P, R, L.

The full sweep of the issue (ρ ∈ {0.25, 0.5, 1, 2}, k ∈ {0, 1, 2} in the order 0,1,2,2,1,0, 3
repeats of 12 steps) is

    OMP_NUM_THREADS=1 python benchmarks/bench_staleness_sweep.py --rho 0.25 0.5 1 2 \\
        --order 0 1 2 2 1 0 --repeats 3 --steps 12

on an idle machine (it records the 1-minute load before and after every run). A small run:

    OMP_NUM_THREADS=1 python benchmarks/bench_staleness_sweep.py --rho 1 --order 0 1 \\
        --repeats 1 --steps 6 --out benchmarks/results/bench_staleness_sweep_small.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "train"))
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_rollout import WORKLOADS  # noqa: E402
from standin_vllm import StandInServer  # noqa: E402


class ClockedServer(StandInServer):
    """The stand-in with a token clock (module doc); ``busy_s``: wall with a request in flight."""

    def __init__(self, *args, delta0: float = 0.0, delta1: float = 0.0, seed: int = 0, **kwargs):
        super().__init__(*args, delay_s=0.0, **kwargs)
        self.delta0, self.delta1, self.seed = float(delta0), float(delta1), int(seed)
        self.in_flight, self.busy_s, self._busy_since = 0, 0.0, 0.0
        self.clock_lock = threading.Lock()
        self.tokens_charged = 0

    def turn_tokens(self, token_ids: list[int]) -> int:
        spec = WORKLOADS["paper"]["turn_tokens"]
        key = hashlib.sha256(json.dumps([self.seed, token_ids]).encode()).digest()
        rng = random.Random(int.from_bytes(key[:8], "big"))
        n = round(math.exp(rng.gauss(math.log(spec["median"]), spec["sigma"])))
        return max(spec["min"], min(spec["max"], n))

    def reply(self, token_ids: list[int]) -> dict:
        n = self.turn_tokens(token_ids)
        with self.clock_lock:
            if self.in_flight == 0:
                self._busy_since = time.perf_counter()
            self.in_flight += 1
            self.tokens_charged += n
        try:
            left = float(n)
            while left > 0:  # a few sleeps a turn, each at the current batch's per-token cost
                with self.clock_lock:
                    per_token = self.delta0 + self.delta1 * self.in_flight
                chunk = min(left, 16.0)
                time.sleep(chunk * per_token)
                left -= chunk
            return super().reply(token_ids)
        finally:
            with self.clock_lock:
                self.in_flight -= 1
                if self.in_flight == 0:
                    self.busy_s += time.perf_counter() - self._busy_since


def load1() -> float:
    return round(os.getloadavg()[0], 2)


def one_run(
    model: Path, work: Path, k: int, steps: int, delta0: float, delta1: float,
    producer: str = "thread",
) -> dict:  # fmt: skip
    """One ``paravt train`` run at ``k`` against a fresh clocked server, the producer's sampling
    in threads of the trainer or in a child process (``trainer.producer``); per-step timings."""
    from transformers import TrainerCallback

    from paravt.train.run import load_command_config, run_training

    server = ClockedServer.for_model(model)
    server.delta0, server.delta1, server.seed = delta0, delta1, 0
    server.start()
    run_dir = work / f"k{k}-{time.time_ns()}"
    cfg = load_command_config(
        "cpu-smoke",
        (
            f"output_dir={run_dir}", f"model={model}", "trainer.use_vllm=true",
            "trainer.vllm_mode=server", f"trainer.vllm_server_base_url={server.url}",
            "trainer.vllm_check_weights=false",
            "trainer.vllm_importance_sampling_mode=token_truncate", f"trainer.max_steps={steps}",
            "trainer.save_steps=100000", f"trainer.max_staleness={k}", "trainer.episode_log=false",
            f"trainer.producer={producer}",
        ),
    )  # fmt: skip
    ends: list[float] = []
    segments: list[float] = []

    class StepEnds(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):
            ends.append(time.perf_counter())

    held: list = []

    def attach(trainer) -> None:
        held.append(trainer)
        trainer.add_callback(StepEnds())
        rollout = trainer._rollout

        def timed(inputs, mode):
            t0 = time.perf_counter()
            try:
                return rollout(inputs, mode)
            finally:
                if mode == "train":
                    segments.append(time.perf_counter() - t0)

        trainer._rollout = timed

    before = load1()
    t0 = time.perf_counter()
    try:
        run_training(cfg, on_trainer=attach)
    finally:
        server.stop()
    wall = time.perf_counter() - t0
    rows = (json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines())
    metrics = [r for r in rows if "loss" in r]
    starts = [t0 + 0.0] + ends[:-1]
    step_walls = [e - s for s, e in zip(starts, ends, strict=True)]
    learn = [w - r for w, r in zip(step_walls, segments, strict=False)]
    return {
        "k": k,
        "producer": producer,
        "steps": len(ends),
        "load_before": before,
        "load_after": load1(),
        "wall_s": round(wall, 2),
        "step_wall_s": [round(x, 3) for x in step_walls],
        "rollout_segment_s": [round(x, 3) for x in segments],
        "learning_s": [round(x, 3) for x in learn],
        # k = 0 logs neither (its push is inside the rollout segment)
        "push_s": [_num(r.get("async/push_s")) for r in metrics],
        "wait_s": [_num(r.get("async/wait_s")) for r in metrics],
        "turns_across_push": [r.get("async/turns_across_push") for r in metrics],
        "staleness_max": [r.get("async/staleness_max") for r in metrics],
        "server_busy_share": round(server.busy_s / wall, 3),
        # producer: process: each step's hand-over, the child's put to the learner's get (s)
        "transfer_s": _transfers(held),
        "tokens_charged": server.tokens_charged,
        "steady_steps_per_hour": round(3600 / statistics.mean(step_walls[1:]), 1)
        if len(step_walls) > 1
        else None,
    }


def _transfers(held: list) -> list[float] | None:
    child = getattr(getattr(held[0], "_async", None), "child", None) if held else None
    return None if child is None else [round(x, 4) for x in child.transfer_s]


def _producers(k: int, args: argparse.Namespace) -> list[str]:
    """The producers a run at ``k`` is made with: k = 0 has none (one run)."""
    return ["thread"] if k == 0 else list(args.producers)


def _num(x) -> float | None:
    return None if x is None else round(float(x), 3)


def mean_after_first(xs: list) -> float:
    rest = [x for x in xs[1:] if x is not None and not math.isnan(x)]
    return statistics.mean(rest) if rest else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rho", type=float, nargs="+", default=[0.25, 0.5, 1.0, 2.0])
    ap.add_argument("--order", type=int, nargs="+", default=[0, 1, 2, 2, 1, 0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--calibration-steps", type=int, default=4)
    ap.add_argument("--delta1", type=float, default=0.0, help="s a token per request in flight")
    ap.add_argument(
        "--producers",
        nargs="+",
        default=["thread"],
        choices=["thread", "process"],
        help="at k >= 1, run each k once per producer (trainer.producer); k = 0 runs once",
    )
    ap.add_argument("--probe-delta0", type=float, default=0.002, help="calibration's Δ0 (s)")
    ap.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / "results" / "bench_staleness_sweep.json"
    )
    args = ap.parse_args()

    from paravt.models.tiny import make_tiny_model

    work = Path(tempfile.mkdtemp(prefix="paravt-staleness-"))
    model = make_tiny_model(work / "model", arch="qwen3-vl")
    result: dict = {
        "command": "OMP_NUM_THREADS=" + os.environ.get("OMP_NUM_THREADS", "") + " python "
        "benchmarks/bench_staleness_sweep.py " + " ".join(sys.argv[1:]),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "load_at_start": load1(),
        "workload": WORKLOADS["paper"]["turn_tokens"],
        "delta1": args.delta1,
    }
    # calibration: L, and R at Δ0 = 0 and at the probe's Δ0, k = 0; R is linear in Δ0 (the
    # clock's sleeps) on top of what does not depend on it (the tools, the frames, HTTP)
    cal0 = one_run(model, work, 0, args.calibration_steps, 0.0, args.delta1)
    cal = one_run(model, work, 0, args.calibration_steps, args.probe_delta0, args.delta1)
    L = statistics.mean([mean_after_first(cal0["learning_s"]), mean_after_first(cal["learning_s"])])
    R_zero = mean_after_first(cal0["rollout_segment_s"])
    R_probe = mean_after_first(cal["rollout_segment_s"])
    slope = max(R_probe - R_zero, 1e-6) / args.probe_delta0  # seconds of R per s/token of Δ0
    result["calibration"] = {
        "runs": [cal0, cal], "L_s": round(L, 3), "R_s_at_zero": round(R_zero, 3),
        "R_s_at_probe": round(R_probe, 3),
    }  # fmt: skip
    cells = []
    for rho in args.rho:
        delta0 = max(0.0, (rho * L - R_zero) / slope)
        runs = []
        for rep in range(args.repeats):
            for k, producer in [(kk, p) for kk in args.order for p in _producers(kk, args)]:
                run = one_run(model, work, k, args.steps, delta0, args.delta1, producer)
                run["repeat"] = rep
                runs.append(run)
                print(json.dumps({"rho": rho, "k": k, "producer": producer, "rep": rep,
                                  "steps_per_hour": run["steady_steps_per_hour"],
                                  "load": [run["load_before"], run["load_after"]]}),
                      flush=True)  # fmt: skip
        base = [r for r in runs if r["k"] == 0]
        L0 = statistics.mean(mean_after_first(r["learning_s"]) for r in base)
        seg0 = statistics.mean(mean_after_first(r["rollout_segment_s"]) for r in base)
        P, R = 0.0, seg0  # at k = 0 the push is inside the segment: counted in R here
        summary = {}
        for k, producer in sorted({(r["k"], r["producer"]) for r in runs}):
            mine = [r for r in runs if r["k"] == k and r["producer"] == producer]
            sph = statistics.mean(r["steady_steps_per_hour"] for r in mine)
            Lk = statistics.mean(mean_after_first(r["learning_s"]) for r in mine)
            summary[str(k) if producer == "thread" else f"{k}/{producer}"] = {
                "steps_per_hour": round(sph, 1),
                "learning_s": round(Lk, 3),
                "inflation": round(Lk / L0, 3),
                "learner_wait_s": round(
                    statistics.mean(mean_after_first(r["rollout_segment_s"]) for r in mine), 3
                ),
                "server_busy_share": round(
                    statistics.mean(r["server_busy_share"] for r in mine), 3
                ),
            }
        t_star = P + max(R, L0)
        for row in summary.values():
            row["speedup_vs_k0"] = round(row["steps_per_hour"] / summary["0"]["steps_per_hour"], 3)
        cells.append({
            "rho": rho, "delta0_s_per_token": round(delta0, 6), "R_s_k0": round(R, 3),
            "L_s_k0": round(L0, 3), "bound_steps_per_hour": round(3600 / t_star, 1),
            "bound_note": "3600 / (P + max(R, L)) from the k = 0 runs, the push counted in R and "
                          "R_cpu in L (both are on the learner's path at k = 0)",
            "summary": summary, "runs": runs,
        })  # fmt: skip
    result["cells"] = cells
    result["load_at_end"] = load1()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=2).replace(str(work), "WORK")
    args.out.write_text(text + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
