"""An event model of the bounded-staleness pipeline: steps an hour and each GPU's busy share.

Why: the sweep (``bench_staleness_sweep.py``) measures the loop on a toy; the paper's layout (1
vLLM server + 7 trainers, Qwen3-VL-8B) cannot run here. A model that reproduces the measured
cells from their own parts (P, R, L) within ±10% can then be fed the 8B per-phase estimates of
``paravt.train.launch.step_time`` (``paravt train --plan``) to say what k buys there.

The model, per step s (policy version s = optimizer steps taken):

- the learner pushes (P; the server is paused meanwhile: keep mode), waits for the rollout of
  step s, then learns (L, plus R_cpu at k ≥ 1: the rollout's CPU work on the learner's process);
- the server runs rollouts one after another (R each; several steps' episodes may interleave,
  but its throughput is the same: a conservative model of one vLLM server, whose decode steps
  slow as its batch grows), or, for the sweep's stand-in at Δ1 = 0, side by side (a clock that
  charges nothing for more requests in flight); the rollout of step j starting once the version is at least
  j − k (the push of step j − k is done) and the server is free. At k = 0 that is P + R + L a
  step; at k ≥ 1 at best P + max(R, L + R_cpu).

Two uses:

    python benchmarks/model_staleness_pipeline.py --check benchmarks/results/bench_staleness_sweep_*.json
    python benchmarks/model_staleness_pipeline.py --paper

``--check``: every cell and k of sweep JSONs, the model's steps an hour (fed R from that cell's
k = 0 runs and L as measured at that k, so it checks the pipeline, not L's inflation, which it
does not predict) against the measured, and whether each is within ±10%. ``--paper``: the paragrpo recipe at
its layout (``layout.trainer_ranks`` trainers + 1 server, 56 episodes a step) with the plan's 8B
estimates (H100, ZeRO-3; decode and prefill on the server, the loss on the trainers; the push is
not estimated there and is taken as ``--push-s``), at k = 0 and 2: steps an hour and the busy
share of the server's GPU and of each trainer's. ``--out`` writes both as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def simulate(
    P: float, R: float, L: float, k: int, steps: int = 200, r_cpu: float = 0.0, serial: bool = True
) -> dict:
    """Steady steps an hour and busy shares of the pipeline above (the first quarter of the steps
    left out as the pipeline fills). A push pauses the server: a rollout under way when it
    starts ends P later (only the last one scheduled is moved: an approximation when P is not
    small against R). ``serial=False``: a server whose throughput grows with the requests in
    flight without bound (the stand-in's token clock at Δ1 = 0), so rollouts of several steps
    run side by side, each R long."""
    version_at: dict[int, float] = {}  # version -> the time its push was done
    rollout_done: dict[int, float] = {}
    server_free, learner, next_j, ends = 0.0, 0.0, 0, []
    for s in range(steps):
        push_end = learner + P
        version_at[s] = push_end
        if server_free > learner:  # the keep-mode pause holds the rollout under way
            server_free += P
        while next_j <= s + k:  # every rollout the versions allow by now
            allowed = version_at[next_j - k] if next_j - k >= 0 else 0.0
            rollout_done[next_j] = (max(server_free, allowed) if serial else allowed) + R
            server_free = rollout_done[next_j]
            next_j += 1
        learner = max(push_end, rollout_done[s]) + L + (r_cpu if k >= 1 else 0.0)
        ends.append(learner)
    warm = steps // 4
    per_step = (ends[-1] - ends[warm]) / (steps - 1 - warm)
    return {
        "steps_per_hour": round(3600 / per_step, 2),
        "step_s": round(per_step, 3),
        "server_busy_share": round(min(1.0, (R + P) / per_step), 3),
        "trainer_busy_share": round(min(1.0, (L + P + (r_cpu if k else 0.0)) / per_step), 3),
    }


def check(path: Path) -> dict:
    """Every cell and k of a sweep: the model fed R from that cell's k = 0 runs and L as measured
    at that k (the rollout's CPU work on the learner's process shows there as L's inflation),
    with a server as the sweep's clock has it (Δ1 = 0: no limit to the requests in flight)."""
    data = json.loads(path.read_text())
    serial = float(data.get("delta1", 0.0)) > 0
    rows = []
    for cell in data["cells"]:
        R = cell["R_s_k0"]  # at k = 0 the push is inside R
        for k, measured in cell["summary"].items():
            model = simulate(0.0, R, measured["learning_s"], int(k), serial=serial)
            err = model["steps_per_hour"] / measured["steps_per_hour"] - 1
            rows.append({
                "rho_asked": cell["rho"], "rho": round(R / cell["L_s_k0"], 2), "k": int(k),
                "measured": measured["steps_per_hour"], "model": model["steps_per_hour"],
                "error": round(err, 3), "within_10pct": abs(err) <= 0.10,
            })  # fmt: skip
    return {"sweep": str(path), "serial_server": serial, "rows": rows}


def paper(push_s: float) -> dict:
    sys.path.insert(0, str(REPO / "src"))
    from paravt.train.launch.plan import plan_for_command
    from paravt.train.launch.step_time import gpu_of, step_time
    from paravt.train.run import load_command_config

    model = REPO / "tests" / "train" / "data" / "qwen3-vl-8b"
    cfg = load_command_config("paragrpo", (f"model={model}",), check_trainer=False)
    plan = plan_for_command(cfg, strategy="zero3")
    est = step_time(plan, gpu_of("h100"))
    R, L = est.rollout_s, est.loss_s
    out = {
        "layout": plan.launch.layout,
        "episodes_per_step": plan.launch.episodes,
        "estimate": {"rollout_s (decode + prefill, server)": R, "loss_s (trainers)": L,
                     "push_s (assumed, not estimated)": push_s},
        "rows": [],
    }  # fmt: skip
    for k in (0, 2):
        row = simulate(push_s, R, L, k)
        out["rows"].append({"k": k, **row})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", type=Path, nargs="*", default=[], help="bench_staleness_sweep JSONs")
    ap.add_argument("--paper", action="store_true", help="the 8B paper layout from the plan")
    ap.add_argument("--push-s", type=float, default=0.0, help="the 8B push (s), not estimated")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    result: dict = {
        "command": "python benchmarks/model_staleness_pipeline.py " + " ".join(sys.argv[1:]),
        "load_before": round(os.getloadavg()[0], 2),
    }
    result["checks"] = [check(path) for path in args.check]
    for checked in result["checks"]:
        for row in checked["rows"]:
            print(
                f"rho={row['rho']} k={row['k']}: measured {row['measured']:.0f} / model "
                f"{row['model']:.0f} steps an hour ({row['error']:+.1%})"
            )
    if args.paper:
        result["paper"] = paper(args.push_s)
        p = result["paper"]
        print(f"{p['layout']}, {p['episodes_per_step']} episodes a step: {p['estimate']}")
        for row in p["rows"]:
            print(
                f"k={row['k']}: {row['steps_per_hour']:.2f} steps an hour, step "
                f"{row['step_s']:.0f} s; server GPU busy {row['server_busy_share']:.0%}, "
                f"each trainer GPU {row['trainer_busy_share']:.0%}"
            )
    result["load_after"] = round(os.getloadavg()[0], 2)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
