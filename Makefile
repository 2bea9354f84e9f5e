# Two entry points (see README Quickstart):
#   make run    set up everything from nothing and run the workflow on the embedded default
#   make test   set up everything and run lint + the test suite
# Both are idempotent: setup steps are skipped when their stamp is newer than their inputs.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export DVC_NO_ANALYTICS := 1
export TOKENIZERS_PARALLELISM := false
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: run test setup system-deps lint lock clean-results

run: setup
	$(BIN)/snakemake --profile profiles/local

test: setup
	bash scripts/run_tests.sh

setup: system-deps $(STAMP)

# Debian packages: a TeX engine for the paper PDF.
system-deps:
	@if ! command -v pdflatex >/dev/null 2>&1; then \
	  echo "Installing a TeX engine from Debian (texlive-latex-base)..."; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    texlive-latex-base texlive-latex-recommended texlive-fonts-recommended lmodern; \
	fi

# The lock pins every transitive package, so it installs with --no-deps (no resolution,
# no surprise upgrades). torch comes first: the pinned CPU wheel, never a CUDA build.
$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --no-deps "$$(grep -E '^torch==' requirements.lock)"
	$(BIN)/python -m pip install -q --no-deps -r requirements.lock
	$(BIN)/python -m pip install -q --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip check
	@touch $(STAMP)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Regenerate requirements.lock from the current venv (after changing pins in pyproject.toml).
lock:
	$(BIN)/python -m pip list --format=freeze --exclude-editable > requirements.lock

clean-results:
	rm -rf results/sample_world results/data results/report logs paper/generated paper/main.pdf
