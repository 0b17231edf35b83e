#!/usr/bin/env bash
# Runs the README's GPU install line (the line after <!-- gpu-install -->) through pip's resolver
# against the package registry, with --dry-run --ignore-installed: nothing is installed, and the
# resolver sees the whole stack (vLLM's CUDA wheel, its pins, TRL, paravt), not what this
# environment already holds. Exits non-zero on a resolver error ("No matching distribution",
# "ResolutionImpossible"); .ci/run calls it. Why constraints-vllm-gpu.txt pins the vLLM it pins
# is written at the top of that file.
#
#   scripts/gpu-install-dryrun.sh [--print]    (--print: show the command, run nothing)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
line=$(awk '/<!-- gpu-install -->/{getline; print; exit}' README.md)
if [ -z "$line" ]; then
    echo "README.md has no GPU install line after <!-- gpu-install -->" >&2
    exit 1
fi
# the README writes it as inline code ending a sentence: `pip install ...`.
cmd=$(printf '%s' "$line" | sed -e 's/^`//' -e 's/`\.\?$//')
case "$cmd" in
    "pip install "*) ;;
    *) echo "README.md's GPU install line is not a pip install command: $line" >&2; exit 1 ;;
esac
dry="pip install --dry-run --ignore-installed --quiet ${cmd#pip install }"
if [ "${1:-}" = "--print" ]; then
    echo "$dry"
    exit 0
fi
echo "+ $dry"
python -m $dry
