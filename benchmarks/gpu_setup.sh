# Sourced by gpu_check.sh and gpu_profile.sh (not run alone): the common start of a lent-GPU
# script. Goes to the repository root, sets OUT_DIR ($OUT, the device tool's output folder, else
# benchmarks/results/gpu), PY ($PYTHON, else python3) and status=0, and installs the wheels
# carried in .whl/ offline into a temporary folder put first on PYTHONPATH, so a carried
# transformers shadows the machine's own; a failed install is logged to pip.log and sets status=1.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT_DIR="${OUT:-benchmarks/results/gpu}"
mkdir -p "$OUT_DIR"
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
status=0

if compgen -G ".whl/*.whl" > /dev/null; then
  SITE="$(mktemp -d)"
  timeout 120 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" .whl/*.whl > "$OUT_DIR/pip.log" 2>&1 \
    && export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" \
    || { echo "wheel install failed (see pip.log)"; status=1; }
fi
