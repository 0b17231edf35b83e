"""How long the checks that need no model take to fail: a mistyped ``--model``, a missing video.

Claim (docs/INFER.md, "Before the model loads"): ``paravt infer`` and ``paravt eval`` say a
mistyped ``--model`` or a missing video in one line within 3 s on the project's 2-core host,
because those checks run before torch (or transformers, or the openai SDK) is imported. Before,
they took 8-22 s and about 900 MB: torch came first.

Each case is a fresh process of the CLI (``launcher`` below: the ``paravt`` console script of a
given checkout, its ``src/``, ``cli/`` and ``kernels/`` put in place of the installed ones), timed
from start to exit: median wall seconds of ``--repeats`` runs, the peak resident memory of the
process (``wait4``), its exit code, and, in one more run under ``python -X importtime``, whether
torch was imported. Baseline in the same run: ``paravt --help`` of the same checkout (what the
CLI costs before any command), and, with ``--before DIR``, every case again with another
checkout (e.g. ``git archive main | tar -x -C DIR``). The Hub is never asked
(``HF_HUB_OFFLINE=1``: a mistyped id fails as on a machine without a network).

    python benchmarks/bench_cli_startup.py [--before DIR] [--repeats 3]
        [--out benchmarks/results/bench_cli_startup.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
#: the most a check that needs no model may take, on the project's 2-core host
BUDGET_S = 3.0

#: ``paravt.cli.main`` of the checkout ``sys.argv[1]``, whatever paravt is installed: its
#: ``src/`` first on the path, and its ``cli/`` and ``kernels/`` found as ``paravt.cli`` and
#: ``paravt.kernels`` (setup.py's mapping) without importing either before the CLI does
LAUNCHER = """
import sys
root = sys.argv.pop(1)
sys.path.insert(0, root + "/src")
import paravt
paravt.__path__.append(root)
from paravt.cli.main import main
sys.exit(main(sys.argv[1:]))
"""
#: a line of ``python -X importtime`` that imports torch itself
TORCH_LINE = re.compile(r"\|\s+torch\s*$")


def cases(work: Path) -> dict[str, tuple[list[str], str]]:
    """``name -> (paravt arguments, stdin)``: each check that needs no model, failing."""
    video = work / "video.mp4"  # a file that is there (these checks never open it)
    video.write_bytes(b"\0" * 1024)
    rows = work / "eval.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "video": f"gone{i}.mp4", "question": "What?", "answer": "x"})
            + "\n"
            for i in range(4)
        )
    )
    stdin = json.dumps({"question": "What?", "video": str(work / "gone.mp4")}) + "\n"
    split = ["--benchmark", "jsonl", "--data", str(rows), "--videos", str(work)]
    return {
        "help": (["--help"], ""),
        "infer_mistyped_model": (["infer", str(video), "-q", "What?", "--model", "toy-dmeo"], ""),
        "infer_missing_video": (["infer", str(work / "gone.mp4"), "-q", "What?"], ""),
        "infer_stdin_missing_video": (["infer", str(video), "-q", "-", "--model", "toy-demo"], stdin),
        "eval_mistyped_model": ([
            "eval", *split, "--out", str(work / "out-a"), "--model", "toy-dmeo"], ""),
        "eval_every_video_missing": ([
            "eval", *split, "--out", str(work / "out-b"), "--model", "toy-demo"], ""),
    }  # fmt: skip


def run_once(root: Path, argv: list[str], stdin: str, env: dict, importtime: bool = False):
    """``(wall s, exit code, stderr)`` of one fresh CLI process."""
    flags = ["-X", "importtime"] if importtime else []
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, *flags, "-c", LAUNCHER, str(root), *argv], input=stdin, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return time.perf_counter() - start, proc.returncode, proc.stderr


def peak_rss(root: Path, argv: list[str], stdin: str, env: dict) -> float:
    """Peak RSS (MB) of one run, from a process of its own (``RUSAGE_CHILDREN`` of a parent
    that runs nothing else)."""
    code = (
        "import resource, subprocess, sys, json\n"
        "p = subprocess.run(json.loads(sys.argv[1]), input=sys.argv[2], text=True,\n"
        "                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
    )
    inner = [sys.executable, "-c", LAUNCHER, str(root), *argv]
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(inner), stdin], capture_output=True, text=True,
        env=env, check=True,
    )  # fmt: skip
    return round(float(out.stdout.strip()), 1)


def _fresh(work: Path) -> None:
    """Each run starts with no eval results in its output folders."""
    for folder in ("out-a", "out-b"):
        shutil.rmtree(work / folder, ignore_errors=True)


def measure(root: Path, work: Path, repeats: int) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    env.pop("PYTHONPATH", None)
    out = {}
    for name, (argv, stdin) in cases(work).items():
        walls, code, last = [], None, ""
        for _ in range(repeats):
            _fresh(work)
            wall, code, last = run_once(root, argv, stdin, env)
            walls.append(wall)
        _fresh(work)
        _, _, timed_imports = run_once(root, argv, stdin, env, importtime=True)
        _fresh(work)
        out[name] = {
            "argv": argv,
            "wall_s": round(statistics.median(walls), 3),
            "walls_s": [round(w, 3) for w in walls],
            "peak_rss_mb": peak_rss(root, argv, stdin, env),
            "exit_code": code,
            "imports_torch": any(TORCH_LINE.search(ln) for ln in timed_imports.splitlines()),
            "last_line": (last.strip().splitlines() or [""])[-1][:300],
        }
        _fresh(work)
        row = out[name]
        print(f"{root.name}: {name}: {row['wall_s']} s, {row['peak_rss_mb']} MB, exit {code}, "
              f"torch {row['imports_torch']}", file=sys.stderr)  # fmt: skip
    base = out["help"]["wall_s"]
    for name, row in out.items():
        row["vs_help"] = round(row["wall_s"] / base, 2) if base else None
        if name != "help":
            row["within_budget"] = row["wall_s"] <= BUDGET_S
    return out


def scrubbed(value, swaps: dict[str, str]):
    """``value`` with each host path in ``swaps`` replaced by its placeholder (strings at any
    depth): what is committed names the run's folders by role (``WORK``, ``BEFORE``, ``~``),
    never by where one machine happened to keep them."""
    if isinstance(value, str):
        for path, name in sorted(swaps.items(), key=lambda kv: -len(kv[0])):
            value = value.replace(path, name)
        return value
    if isinstance(value, list):
        return [scrubbed(v, swaps) for v in value]
    if isinstance(value, dict):
        return {k: scrubbed(v, swaps) for k, v in value.items()}
    return value


def host_swaps(work: Path | None = None, before: Path | None = None) -> dict[str, str]:
    """The host paths a result may hold, each with the placeholder that replaces it."""
    swaps = {str(REPO): "REPO", str(Path.home()): "~"}
    if work is not None:
        swaps[str(work)] = "WORK"
    if before is not None:
        swaps[str(before)] = "BEFORE"
    return swaps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, default=None, help="Checkout to compare with.")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=RESULTS / "bench_cli_startup.json")
    args = ap.parse_args()
    variants = [("after", REPO)]
    if args.before is not None:
        variants.insert(0, ("before", args.before.resolve()))
    runs: dict = {}
    result = {
        "command": scrubbed(
            " ".join([Path(sys.argv[0]).as_posix(), *sys.argv[1:]]), host_swaps(before=args.before)
        ),
        "budget_s": BUDGET_S,
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "load_1m_before": round(os.getloadavg()[0], 2),
        },
        "runs": runs,
        "complete": False,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for label, root in variants:  # the JSON is rewritten after each variant
        with tempfile.TemporaryDirectory(prefix="paravt-startup-") as tmp:
            cases_run = measure(root, Path(tmp), args.repeats)
            swaps = host_swaps(Path(tmp), args.before and args.before.resolve())
            runs[label] = scrubbed({"root": str(root), "cases": cases_run}, swaps)
        result["machine"]["load_1m_after"] = round(os.getloadavg()[0], 2)
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    if "before" in runs:
        result["after_over_before"] = {
            name: round(row["wall_s"] / runs["before"]["cases"][name]["wall_s"], 3)
            for name, row in runs["after"]["cases"].items()
        }
    result["complete"] = True
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result.get("after_over_before", {}), indent=2))


if __name__ == "__main__":
    main()
