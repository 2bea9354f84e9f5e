# Names shared by the rule modules; the functions live in personalir.workflow.support.
from functools import partial

from personalir.workflow import support as workflow_support

# Rules run `python`: the interpreter running Snakemake (the venv's) comes first on PATH, so
# `.venv/bin/snakemake ...` needs no activated venv, here and in cluster jobs.
workflow_support.put_interpreter_first_on_path()

# Every rule hands its script the config values it reads as params_json(...) (derived
# values as compact_json(...)): one format, and a rerun trigger when a value changes.
params_json = partial(workflow_support.params_json, config)
compact_json = workflow_support.compact_json
results = partial(workflow_support.results_path, RESULTS)
logs = partial(workflow_support.results_path, LOGS)
generated = partial(workflow_support.results_path, GENERATED)
# Every rule's Snakemake benchmark (wall s, max RSS, CPU s of the job), host facts like the
# logs and beside them: <results>/logs/benchmarks/<stage>/<rule>[.<wildcards>].tsv (python -m
# personalir.report.rule_benchmarks aggregates them).
bench = partial(workflow_support.benchmark_path, f"{LOGS}/benchmarks")


def shown(path, caption, category, subcategory=None):
    """An output shown by ``snakemake --report`` (``make report``): its caption is
    ``rules/captions/<caption>.rst``, a Jinja template that may name ``snakemake.wildcards``."""
    return report(
        path, caption=f"captions/{caption}.rst", category=category, subcategory=subcategory
    )


raw_file = partial(workflow_support.raw_file, config)
# Domains whose product catalogue (meta file) the configuration provides.
CATALOGUE_DOMAINS = [d for d in DOMAINS if workflow_support.has_catalogue(config, d)]
# Dequantised float32 copies of packaged GGUF models (SmolLM2), made once and read by every
# rule that loads one (queries, the LLM rerankers, the TTP backbone and HyDE); outside the DAG
# like a conda env: deleting it only costs time. `model_cache: false` turns it off.
GGUF_CACHE = results("model_cache") if config["model_cache"] else ""
