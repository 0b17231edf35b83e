#!/usr/bin/env bash
# GPU acceptance for paravt.kernels on a lent CUDA machine, in well under 5 minutes:
#   1. install the wheels carried in .whl/ (offline) and paravt itself (editable, no deps);
#   2. run the `gpu`-marked tests (Triton kernels compiled for the device vs the torch reference);
#   3. run `paravt bench-kernels --device cuda --json` (Triton vs reference vs HF processors, and
#      achieved bytes/s against a copy-bandwidth measurement taken in the same run).
# Everything lands in $OUT (the device tool's output folder; benchmarks/results/gpu otherwise):
#   gpu_tests.log, gpu_tests.xml, bench_kernels_cuda.json, bench_kernels_cuda.log, gpu_info.txt.
# Commit bench_kernels_cuda.json under benchmarks/results/ afterwards.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR="${OUT:-benchmarks/results/gpu}"
mkdir -p "$OUT_DIR"
status=0

if compgen -G ".whl/*.whl" > /dev/null; then
  timeout 120 python -m pip install -q --no-index --find-links .whl .whl/*.whl \
    > "$OUT_DIR/pip.log" 2>&1 || { echo "wheel install failed (see pip.log)"; status=1; }
fi
timeout 60 python -m pip install -q -e . --no-deps --no-build-isolation >> "$OUT_DIR/pip.log" 2>&1 \
  || { echo "paravt install failed (see pip.log)"; status=1; }

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
  python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available())"
} > "$OUT_DIR/gpu_info.txt" 2>&1

timeout 150 python -m pytest -q -m gpu tests/kernels -rA -s --junitxml "$OUT_DIR/gpu_tests.xml" \
  > "$OUT_DIR/gpu_tests.log" 2>&1 || { echo "gpu tests failed (see gpu_tests.log)"; status=1; }
tail -n 5 "$OUT_DIR/gpu_tests.log"

timeout 120 paravt bench-kernels --device cuda --json --set repeats=10 --set warmup=2 \
  > "$OUT_DIR/bench_kernels_cuda.json" 2> "$OUT_DIR/bench_kernels_cuda.log" \
  || { echo "bench-kernels failed (see bench_kernels_cuda.log)"; status=1; }
tail -n 25 "$OUT_DIR/bench_kernels_cuda.log"
exit $status
