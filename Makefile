# Two entry points (see README Quickstart):
#   make run    set up everything from nothing and run the workflow on the embedded default
#   make test   set up everything and run lint + the test suite
# Both are idempotent: setup steps are skipped when their stamp is newer than their inputs.
# Each target installs only what it uses: `setup-python` (the venv: no root, no system packages)
# for the Python tools, `fetch` and `cluster-setup`; TeX and Java (`system-deps`, apt-get with
# sudo when missing) only for `run` (TeX: the paper PDF), `dvc-update` and `test` (Java: the
# Lucene parity test).

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
PIP := $(BIN)/python -m pip install -q --no-deps
# This machine's pip config lists local indexes that may be absent; keep their warnings out.
QUIET_PIP := 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export DVC_NO_ANALYTICS := 1
export TOKENIZERS_PARALLELISM := false
export PATH := $(CURDIR)/$(BIN):$(PATH)
# The torch build (scripts/torch_build.py): TORCH=cpu|cuda overrides the guess (unset: the CUDA
# build where an NVIDIA driver is present, else the CPU build); TORCH_CUDA=cu126|cu128|cu130
# names the CUDA variant (unset: chosen from the driver; cu126 where there is none to ask).
TORCH ?= auto
TORCH_CUDA ?=
TORCH_STATE := $(VENV)/.torch-build

.PHONY: run test setup setup-python system-deps system-tex system-java lint lock clean-results \
	rule-benchmarks benchmarks report paper-scale-plan FORCE

# Before and after Snakemake, every output dvc.lock records is checked by content (those not
# changed since their last check by a stat only): a flipped byte, mtime kept, is named and
# stops the run instead of passing for up to date (scripts/verify_outputs.py).
run: system-tex setup-python
	$(BIN)/python scripts/verify_outputs.py
	@start=$$($(BIN)/python -c 'import time; print(time.time_ns() - 2_000_000_000)'); \
	$(BIN)/snakemake --profile profiles/local && \
	$(BIN)/python scripts/verify_outputs.py --written-since-ns $$start

test: setup $(DEV_STAMP)
	bash scripts/run_tests.sh

setup: system-deps setup-python

# The venv with the locked packages and the torch build that fits: no root, no system packages.
setup-python: $(STAMP)

# Debian packages, each installed only where missing: a TeX engine for the paper PDF; a Java 17
# runtime for pyserini's Lucene (the BM25 parity test and the `pyserini` comparison in
# benchmarks/bench_retrieval.py).
system-deps: system-tex system-java

system-tex:
	@if ! command -v pdflatex >/dev/null 2>&1; then \
	  echo "Installing a TeX engine from Debian (texlive-latex-base)..."; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    texlive-latex-base texlive-latex-recommended texlive-fonts-recommended lmodern; \
	fi

system-java:
	@if ! command -v java >/dev/null 2>&1; then \
	  echo "Installing a Java runtime from Debian (openjdk-17-jre-headless)..."; \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  $$SUDO apt-get update -qq && \
	  $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	    openjdk-17-jre-headless; \
	fi

# The choice, printed at every setup; the file changes (and torch is reinstalled) only when the
# choice does.
$(TORCH_STATE): FORCE
	@$(PYTHON) scripts/torch_build.py choose --torch "$(TORCH)" --cuda "$(TORCH_CUDA)" \
	  --lock requirements.lock --state $@

FORCE:

# The lock pins every transitive package, so it installs with --no-deps (no resolution,
# no surprise upgrades), all but torch: the chosen build of the lock's torch version.
$(STAMP): requirements.lock pyproject.toml $(TORCH_STATE)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	grep -v -E '^torch==' requirements.lock > $(VENV)/requirements-without-torch.txt
	$(PIP) -r $(VENV)/requirements-without-torch.txt $(QUIET_PIP)
	$(BIN)/python scripts/torch_build.py install --state $(TORCH_STATE) $(QUIET_PIP)
	$(PIP) --no-build-isolation -e . $(QUIET_PIP)
	$(BIN)/python scripts/check_env.py
	@touch $(STAMP)

# The dev tools (pytest, ruff, bandit, pypdfium2) with their own pins: for `make test`/`lint`.
$(DEV_STAMP): requirements-dev.lock $(STAMP)
	$(PIP) -r requirements-dev.lock $(QUIET_PIP)
	@touch $(DEV_STAMP)

lint: setup-python $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Regenerate requirements.lock from the current venv (after changing pins in pyproject.toml):
# every installed package but the dev tools that requirements-dev.lock pins. The lock pins
# torch's CPU build: regenerate it from a venv set up with TORCH=cpu.
lock:
	@v=$$($(BIN)/python -c 'import importlib.metadata as m; print(m.version("torch"))'); \
	  case "$$v" in *+cpu) ;; *) echo "make lock: torch $$v here; the lock pins the CPU build:" \
	  "set up with TORCH=cpu first" >&2; exit 1;; esac
	$(BIN)/python -m pip list --format=freeze --exclude-editable \
	  | grep -v -i -E "^($$(sed -n 's/==.*//p' requirements-dev.lock | paste -sd'|' -))==" \
	  > requirements.lock

# One self-contained HTML page of every figure and main table with its caption (after a run).
report: setup-python
	$(BIN)/snakemake --profile profiles/local --report results/logs/report.html

# Every rule's wall time, CPU time and peak memory from Snakemake's benchmark files of the
# jobs that have run in results/ (after `make run`), and the critical path through the plan of
# a forced dry run: tables and a figure in results/logs/.
rule-benchmarks: setup-python
	mkdir -p results/logs
	$(BIN)/snakemake --profile profiles/local --forceall --dry-run > results/logs/plan.txt
	$(BIN)/python -m personalir.report.rule_benchmarks results/logs/benchmarks \
		--plan results/logs/plan.txt --critical-csv results/logs/critical_path.csv \
		--csv results/logs/rule_benchmarks.csv --md results/logs/rule_benchmarks.md \
		--figure results/logs/rule_benchmarks.pdf

# The paper-scale plan (docs/paper_scale.md) from this results tree's benchmark records:
# CPU-hours, GPU-hours and SLURM resources per rule in results/logs/paper_scale.{csv,md}.
# The checked-in table and the SLURM profile's block come from the f64f772 cold run's records
# (docs/data/cold_run_f64f772_rules.csv), not from these.
paper-scale-plan: setup-python
	mkdir -p results/logs
	$(BIN)/python -m personalir.report.paper_scale results/logs/benchmarks \
		--rules-csv results/logs/paper_scale_rules.csv \
		--csv results/logs/paper_scale.csv --md results/logs/paper_scale.md

# Every stage's cost per unit of work at x1 and x10 and the reference ratios (docs/speed.md).
benchmarks: setup-python
	$(BIN)/python benchmarks/all_stages.py

clean-results:
	rm -rf results/sample_world results/data results/report results/logs results/paper

# --- Cluster and artifacts (docs/cluster.md, docs/artifacts.md)
.PHONY: fetch dvc-update cluster-setup slurm-up slurm-down

# Sample-scale artifacts from the DVC remote, verified, with file times in pipeline order.
fetch: setup-python
	$(BIN)/python scripts/fetch_artifacts.py

# Maintainers, after a change to rules, config or code: regenerate dvc.yaml from the DAG,
# rebuild what no longer matches dvc.lock, record every artifact and push it to the in-repo
# remote (then commit dvc.yaml, dvc.lock and dvc-store/).
dvc-update: system-tex setup-python
	$(BIN)/python scripts/dvc_update.py

# The SLURM executor plugin (cluster extra; kept out of the local lock on purpose).
cluster-setup: setup-python
	$(BIN)/python -m pip install -q --no-deps -r requirements-cluster.txt

# A one-node SLURM cluster on this machine (root; Debian packages installed if missing).
slurm-up:
	bash scripts/slurm_local_cluster.sh up

slurm-down:
	bash scripts/slurm_local_cluster.sh down

# --- The dress rehearsal of the paper configuration (docs/paper_scale.md, "The dress rehearsal")
.PHONY: rehearsal rehearsal-dry-run
# config/rehearsal.yaml over config/paper.yaml: stand-in models, the sample world at the paper's
# volume, the CPU. Through the one-node SLURM cluster (root: `slurm-up`), with the real profile
# and the local cluster's overrides (profiles/slurm-test). First the inputs the stages read from
# configured folders (stand-in models, the TTP released-format sets), then the run; the rules'
# time and peak memory land in results-rehearsal/logs/ (rule_benchmarks).
REHEARSAL_CONFIG := --configfile config/paper.yaml config/rehearsal.yaml
REHEARSAL_PROFILE := --profile profiles/slurm --workflow-profile profiles/slurm-test
rehearsal: system-tex cluster-setup slurm-up
	$(BIN)/snakemake $(REHEARSAL_PROFILE) $(REHEARSAL_CONFIG) -- rehearsal_inputs
	$(BIN)/snakemake $(REHEARSAL_PROFILE) $(REHEARSAL_CONFIG)
	$(BIN)/snakemake --profile profiles/local $(REHEARSAL_CONFIG) --forceall --dry-run \
		> results-rehearsal/logs/plan.txt
	$(BIN)/python -m personalir.report.rule_benchmarks results-rehearsal/logs/benchmarks \
		--plan results-rehearsal/logs/plan.txt --csv results-rehearsal/logs/rule_benchmarks.csv \
		--critical-csv results-rehearsal/logs/critical_path.csv \
		--md results-rehearsal/logs/rule_benchmarks.md

# The rehearsal's job plan only (no cluster, no job run): the DAG resolves with its config.
rehearsal-dry-run: setup-python
	$(BIN)/snakemake --profile profiles/local $(REHEARSAL_CONFIG) --dry-run -- rehearsal_inputs
	$(BIN)/snakemake --profile profiles/local $(REHEARSAL_CONFIG) --dry-run
