# The dress rehearsal of the paper configuration (config/rehearsal.yaml laid over
# config/paper.yaml; `make rehearsal`, docs/paper_scale.md): its inputs, built before the run
# because the stages read models and released sets from configured folders, not from rule
# outputs. No target of the embedded default needs these rules.
import yaml

from personalir.rehearsal.data import check_sets

REHEARSAL_DATA_FILE = "config/rehearsal_data.yaml"
with open(REHEARSAL_DATA_FILE, encoding="utf-8") as _fh:
    REHEARSAL_SETS = (yaml.safe_load(_fh) or {}).get("sets")
check_sets(REHEARSAL_SETS, REHEARSAL_DATA_FILE)


rule rehearsal_models:
    """Tiny stand-ins of every hub model config/paper.yaml names, one folder per hub id."""
    input:
        config="config/paper.yaml",
    output:
        models=directory(results("rehearsal", "models")),
    benchmark:
        bench("rehearsal", "rehearsal_models")
    log:
        logs("rehearsal", "models.log"),
    resources:
        mem_mb=2000,
        runtime=10,
    threads: 1
    conda:
        "../envs/errors.yaml"
    shell:
        "python -u workflow_scripts/rehearsal_models.py --config {input.config:q}"
        " --out-dir {output.models:q} > {log:q} 2>&1"


rule rehearsal_data:
    """One TTP released set's stand-in files, at the volume config/rehearsal_data.yaml gives."""
    wildcard_constraints:
        standin_set="|".join(REHEARSAL_SETS),
    input:
        volumes=REHEARSAL_DATA_FILE,
    output:
        files=directory(results("rehearsal", "data", "{standin_set}")),
        report=results("rehearsal", "data", "{standin_set}.report.json"),
    params:
        spec=lambda w: compact_json(REHEARSAL_SETS[w.standin_set]),
        search_log=lambda w: params_json("sample", "search_log"),
        seed=config["seed"],
        min_sentences=config["sample"]["min_sentences_per_user"],
    benchmark:
        bench("rehearsal", "rehearsal_data", "standin_set")
    log:
        logs("rehearsal", "data_{standin_set}.log"),
    resources:
        mem_mb=16000,
        runtime=120,
    threads: 1
    conda:
        "../envs/ttp.yaml"
    shell:
        "python -u workflow_scripts/rehearsal_data.py --spec {params.spec:q}"
        " --search-log {params.search_log:q}"
        " --seed {params.seed} --min-sentences-per-user {params.min_sentences}"
        " --out-dir {output.files:q} --report {output.report:q} > {log:q} 2>&1"


rule rehearsal_inputs:
    """Everything the rehearsal reads from configured folders: the stand-in models and sets."""
    input:
        rules.rehearsal_models.output.models,
        expand(
            results("rehearsal", "data", "{standin_set}.report.json"),
            standin_set=REHEARSAL_SETS,
        ),
