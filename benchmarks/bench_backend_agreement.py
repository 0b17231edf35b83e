"""hf vs openai (``transformers serve`` or vLLM): do the two backends give the same answers?

Claim (docs/INFER.md, "hf and openai backends"): at temperature 0, one checkpoint answers a toy
eval split the same way through the ``hf`` backend (in process) and through the ``openai`` backend
against ``transformers serve`` (a subprocess on loopback), on at least 95% of the questions.
``paravt.eval.agreement.run_agreement`` does the work; this script reads an eval config (the
YAML that ``paravt eval --config`` takes, e.g. the toy experiment's ``configs/eval-4-parallel.yaml``)
so both sides run exactly the evaluation the experiment runs. Output: ``OUT/agreement.json`` (the
two eval folders and the server log beside it) and a copy in
``benchmarks/results/bench_backend_agreement.json``.

    paravt make-toy-task /tmp/toy --n 40 --seed 0 --split eval --set 'question_types=[mcq]'
    python benchmarks/bench_backend_agreement.py --model RUN/sft --data /tmp/toy \\
        --config RUN/configs/eval-4-parallel.yaml --out /tmp/agree

``--server vllm`` (from the vLLM environment, ``scripts/vllm-env.sh``) serves the model with vLLM
instead; its results go to ``benchmarks/results/bench_backend_agreement_vllm.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="a local model folder (e.g. the toy SFT model)")
    ap.add_argument("--data", required=True, help="folder written by paravt make-toy-task")
    ap.add_argument("--out", required=True, help="folder for the two eval runs and the report")
    ap.add_argument("--config", help="an eval config YAML (its engine section is used as is)")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads of the server and of hf")
    ap.add_argument("--server", choices=("transformers", "vllm"), default="transformers")
    ap.add_argument(
        "--results", help="default: benchmarks/results/bench_backend_agreement[_vllm].json"
    )
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    # a kill (SIGTERM) unwinds like Ctrl-C, so the server subprocess is shut down too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    from paravt.config import load_config
    from paravt.eval.agreement import ServeSettings, run_agreement
    from paravt.eval.config import EvalConfig

    base = {"benchmark": "jsonl", "data": args.data, "videos": args.data, "out": args.out,
            "backend": {"model": args.model}}  # fmt: skip
    cfg = load_config(EvalConfig, args.config, args.overrides, base=base)
    t0 = time.perf_counter()
    if args.results is None:
        tail = "_vllm" if args.server == "vllm" else ""
        args.results = str(RESULTS / f"bench_backend_agreement{tail}.json")
    serve = ServeSettings(threads=args.threads, server=args.server, startup_timeout_s=900)
    report = run_agreement(cfg, serve)
    report["total_s"] = round(time.perf_counter() - t0, 1)
    report["command"] = " ".join(["python", "benchmarks/bench_backend_agreement.py",
                                  *sys.argv[1:]])  # fmt: skip
    Path(args.out, "agreement.json").write_text(json.dumps(report, indent=1, default=str))
    Path(args.results).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(Path(args.out, "agreement.json"), args.results)
    heads = report["headline"]
    print(
        f"agreement {report['same']}/{report['n']} = {report['agreement']:.1%}; "
        f"accuracy hf {heads['hf']['headline'].get('value')} openai "
        f"{heads['openai']['headline'].get('value')}; {report['total_s']} s -> {args.results}"
    )


if __name__ == "__main__":
    main()
