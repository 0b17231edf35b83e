#!/usr/bin/env bash
# The on-device path checked on one lent H100 or H200, in at most 10 minutes, writing one JSON
# ($OUT/gpu_check.json, or benchmarks/results/gpu/gpu_check.json): the one-pass kernel's parity
# and time against the copy floor, the on-device path's stream syncs and host-to-device copies,
# NVDEC decoding of the test videos against CPU decoding, and the 8B learner's peak against
# `paravt train --plan` (benchmarks/gpu_check.py says what each section does).
#
# Only PyPI wheels: the machine's own torch/triton, or wheels carried in .whl/ (gpu_setup.sh
# installs them offline; carried files are capped at 64 MiB), and paravt itself, editable, no
# deps. Test videos: carry .gpu_videos/ (optional; the nvdec section says it was skipped).
# Time: the gpu-marked tests at most 150 s, the checks at most 360 s, installs at most 90 s.
#
# Without a CUDA device it refuses in one line (exit 3) before installing anything.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
if ! "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)" 2> /dev/null; then
  echo "benchmarks/gpu_check.sh: no CUDA device visible to $PY (torch.cuda.is_available() is False, or no torch); run it on a GPU machine" >&2
  exit 3
fi
# shellcheck source=benchmarks/gpu_setup.sh
source benchmarks/gpu_setup.sh
timeout 90 "$PY" -m pip install -q --no-index --no-deps --no-build-isolation -e . \
  >> "$OUT_DIR/pip.log" 2>&1 || { echo "paravt install failed (see pip.log)"; status=1; }

timeout 150 "$PY" -m pytest -q -m gpu tests/kernels tests/agent/test_device_path.py -rA \
  -p no:cacheprovider > "$OUT_DIR/gpu_tests.log" 2>&1 \
  || { echo "gpu tests failed (see gpu_tests.log)"; status=1; }
tail -n 5 "$OUT_DIR/gpu_tests.log"

videos=()
if [ -d .gpu_videos ]; then videos=(--videos .gpu_videos); fi
timeout 360 "$PY" benchmarks/gpu_check.py "$OUT_DIR/gpu_check.json" --deadline-s 330 "${videos[@]}" \
  || { echo "gpu_check.py failed or timed out (see gpu_check.json)"; status=1; }
exit $status
