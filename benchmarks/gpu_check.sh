#!/usr/bin/env bash
# GPU acceptance for paravt.kernels on a lent CUDA machine, in well under 7 minutes:
#   1. install the wheels carried in .whl/ offline into a temporary folder (put first on
#      PYTHONPATH, so a carried transformers shadows the machine's own), and paravt itself
#      (editable, no deps);
#   2. run the `gpu`-marked tests (Triton kernels compiled for the device vs the torch reference);
#   3. run `paravt bench-kernels --device cuda --json` (Triton vs reference vs HF processors, and
#      achieved bytes/s against a copy-bandwidth measurement taken in the same run).
# What to carry (ignored folders, built on the host; the machine has no network):
#   .whl/         transformers within the project's range (the image's may be older) and the
#                 torchcodec release built for the machine's torch (0.11 for torch 2.11);
#   .gpu_videos/  optional: real test videos; copied to ../shared/videos (where tests/media.py
#                 looks) only when torchcodec can decode there (it needs the system's FFmpeg),
#                 else the real-frames test skips as it does on any machine without them.
# Everything lands in $OUT (the device tool's output folder; benchmarks/results/gpu otherwise):
#   pip.log, gpu_info.txt, gpu_tests.log, gpu_tests.xml, bench_kernels_cuda.json,
#   bench_kernels_cuda.log.
# Commit bench_kernels_cuda.json under benchmarks/results/ afterwards.
set -uo pipefail
# shellcheck source=benchmarks/gpu_setup.sh
source "$(dirname "$0")/gpu_setup.sh"
timeout 90 "$PY" -m pip install -q --no-index --no-deps --no-build-isolation -e . \
  >> "$OUT_DIR/pip.log" 2>&1 || { echo "paravt install failed (see pip.log)"; status=1; }
if command -v paravt > /dev/null; then PARAVT=(paravt); else PARAVT=("$PY" -m paravt.cli.main); fi

{ echo "repo root: $PWD"; echo "python: $(command -v "$PY")"; echo "paravt: ${PARAVT[*]}"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem --format=csv || true
  "$PY" - <<'EOF'
import torch, triton, torchvision, transformers, paravt.kernels
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
print("triton", triton.__version__, "torchvision", torchvision.__version__,
      "transformers", transformers.__version__, transformers.__file__.split("/transformers/")[0])
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device", p.name, "cc", f"{p.major}.{p.minor}", "sms", p.multi_processor_count,
          "mem_GiB", round(p.total_memory / 2**30, 1), "L2_MB", round(getattr(p, "L2_cache_size", 0) / 1e6, 1))
EOF
  echo "ffmpeg: $(command -v ffmpeg || echo none); libavcodec: $(ldconfig -p | grep -c libavcodec)"
  if [ -d .gpu_videos ] && "$PY" -c "from torchcodec.decoders import VideoDecoder as V; \
       print('torchcodec decodes:', tuple(V('.gpu_videos/torchcodec__testsrc2.mp4').get_frames_at([0]).data.shape))"; then
    if [ ! -e ../shared/videos ]; then mkdir -p ../shared && cp -r .gpu_videos ../shared/videos; fi
  else echo "torchcodec cannot decode here: the real-frames test will skip"; fi
} > "$OUT_DIR/gpu_info.txt" 2>&1

timeout 180 "$PY" -m pytest -q -m gpu tests/kernels -rA -s -p no:cacheprovider \
  --junitxml "$OUT_DIR/gpu_tests.xml" > "$OUT_DIR/gpu_tests.log" 2>&1 \
  || { echo "gpu tests failed (see gpu_tests.log)"; status=1; }
tail -n 5 "$OUT_DIR/gpu_tests.log"

timeout 180 "${PARAVT[@]}" bench-kernels --device cuda --json --set repeats=10 --set warmup=2 \
  > "$OUT_DIR/bench_kernels_cuda.json" 2> "$OUT_DIR/bench_kernels_cuda.log" \
  || { echo "bench-kernels failed (see bench_kernels_cuda.log)"; status=1; }
tail -n 25 "$OUT_DIR/bench_kernels_cuda.log"
exit $status
