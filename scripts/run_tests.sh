#!/usr/bin/env bash
# The test command: lint, the rule graph in docs/workflow.md, then the whole suite, which includes the
# whole workflow on config/tiny.yaml (tests/integration/test_tiny_run.py, a few minutes; pass
# -m "not tiny_run" to leave it out). pytest's exit code 5 ("no tests collected") is an error
# here: a suite that runs nothing must not pass.
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
echo "== rule graph (docs/workflow.md)"
"$BIN/python" scripts/rulegraph.py --check
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
