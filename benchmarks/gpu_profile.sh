#!/usr/bin/env bash
# Profile the CUDA pixel_values call on a lent GPU (about 1-2 minutes): host work vs GPU kernels.
#   1. install the wheels carried in .whl/ offline into a temporary folder, as gpu_check.sh does
#      (paravt itself is imported from the checkout, no install needed);
#   2. run benchmarks/profile_pixel_values.py: wall / host / pipelined ms per call, a
#      torch.profiler trace (kernels with counts and GPU time; launch, sync and memcpy calls),
#      CUDA-graph replay of the kernels alone, fraction of copy bandwidth; tile-size sweep.
# Optional first argument: a folder (repo-relative, e.g. an ignored copy of an earlier kernels/
# api.py + triton_resize.py) measured beside the working tree's kernels in the same process.
# Everything lands in $OUT (the device tool's output folder; benchmarks/results/gpu otherwise):
#   pip.log, profile_pixel_values.json, profile_pixel_values.log.
set -uo pipefail
# shellcheck source=benchmarks/gpu_setup.sh
source "$(dirname "$0")/gpu_setup.sh"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv || true

OLD=()
if [ -n "${1:-}" ]; then OLD=(--old "$1"); fi
timeout 300 "$PY" benchmarks/profile_pixel_values.py --out "$OUT_DIR" "${OLD[@]}" \
  || { echo "profile failed"; status=1; }
exit $status
