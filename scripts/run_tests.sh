#!/usr/bin/env bash
# The test command: lint, then the whole suite. pytest's exit code 5 ("no tests collected")
# is an error here: a suite that runs nothing must not pass.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 DVC_NO_ANALYTICS=1 TOKENIZERS_PARALLELISM=false
export PATH="$PWD/$BIN:$PATH"
echo "== ruff"
"$BIN/ruff" check .
"$BIN/ruff" format --check .
echo "== snakemake --lint"
"$BIN/snakemake" --lint --cores 1 >/tmp/snakemake-lint.$$ 2>&1 || {
  cat /tmp/snakemake-lint.$$; rm -f /tmp/snakemake-lint.$$; exit 1; }
rm -f /tmp/snakemake-lint.$$
echo "== pytest"
set +e
"$BIN/python" -m pytest "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
