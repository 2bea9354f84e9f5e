#!/usr/bin/env bash
# The GPU check (docs/paper_scale.md, "The GPU check"): the paper configuration's GPU code
# paths (TTP SFT steps, a GRPO step, generation + <embed>, dense, SPLADE, BGE-M3 and ColBERT
# encoding, the two LLM rerankers) on a device and on the CPU over the same small inputs,
# compared within stated tolerances, throughput recorded. Under 8 minutes with a GPU.
#
#   bash scripts/gpu_check.sh                    # cuda vs cpu -> results/logs/gpu_check.json
#   bash scripts/gpu_check.sh --device cpu       # cpu vs cpu: a self-test of the check itself
#   bash scripts/gpu_check.sh --out FILE --work DIR [--only CHECK ...] [--docs N --queries N]
#
# Exit status 0 when every check passes, 1 when one fails (the JSON says which and by how much).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
DEVICE=cuda
OUT=results/logs/gpu_check.json
WORK=
ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
    --device) DEVICE=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    *) ARGS+=("$1"); shift ;;
  esac
done
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
mkdir -p "$(dirname "$OUT")"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PERSONALIR_PROGRESS_SECONDS=${PERSONALIR_PROGRESS_SECONDS:-off}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
start=$(date +%s)
set +e
"$PY" -m personalir.rehearsal.gpu_check --device "$DEVICE" --reference cpu \
  --out "$OUT" --work "$WORK" "${ARGS[@]}"
rc=$?
set -e
echo "[gpu_check] wall time $(( $(date +%s) - start )) s; record: $OUT"
exit $rc
