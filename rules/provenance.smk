# Provenance: each results folder records what produced it (config hash, code version, package
# versions, model identifiers) and the sha256 of every artifact in it, in provenance.json.
# Include this module LAST: it follows the targets the other modules added back through the
# rules, so each folder's `provenance` job depends on exactly that folder's artifacts.
# Before a run starts jobs, the artifacts it will read are checked (see `onstart` below).
import os

from personalir.common import provenance_workflow as prov
from personalir.common.provenance import model_identifiers
from personalir.common.codedeps import rules_code_by_rule
from personalir.common.config import config_hash

PRODUCED = prov.static_dag(FINAL_TARGETS, workflow.rules)
PROVENANCE_FOLDERS = prov.artifacts_by_folder(PRODUCED, RESULTS)
# The code behind each folder: the scripts of the rules that wrote its artifacts and every
# module they import. The record hashes exactly these files, and they are the job's inputs,
# so the record changes (and DVC reruns it) when, and only when, that code changes.
# The walks are kept in .snakemake/ while no module changes, so a no-op run parses none.
_CODE_RULES = sorted({r for rules_of in PROVENANCE_FOLDERS.values() for r in rules_of.values()})
_RULE_CODE = {
    r: set(files)
    for r, files in rules_code_by_rule(
        {r: workflow.get_rule(r).shellcmd for r in _CODE_RULES},
        workflow.basedir,
        cache=os.path.join(workflow.basedir, ".snakemake", "personalir", "codedeps.json"),
    ).items()
}
PROVENANCE_CODE = {
    folder: sorted(set().union(*(_RULE_CODE[r] for r in rules_of.values())))
    for folder, rules_of in PROVENANCE_FOLDERS.items()
}


rule provenance:
    """Record config hash, code version, packages, models and artifact hashes of one folder."""
    input:
        artifacts=lambda w: prov.folder_artifacts(PROVENANCE_FOLDERS, RESULTS, w.folder),
        code=lambda w: PROVENANCE_CODE[w.folder],
    output:
        record=results("{folder}", "provenance.json"),
    wildcard_constraints:
        folder=prov.alternation(PROVENANCE_FOLDERS),
    params:
        artifacts=lambda w: prov.compact_json(PROVENANCE_FOLDERS[w.folder]),
        config_sha256=config_hash(config),
        label=config["label"],
        models=prov.compact_json(model_identifiers(config)),
    benchmark:
        bench("provenance", "provenance", "folder")
    log:
        logs("provenance", "{folder}.log"),
    resources:
        mem_mb=500,
        runtime=10,
    threads: 1
    conda:
        "../envs/provenance.yaml"
    shell:
        "python -u workflow_scripts/provenance.py --folder \"$(dirname {output.record:q})\""
        " --artifacts {params.artifacts:q} --config-sha256 {params.config_sha256}"
        " --label {params.label:q} --models {params.models:q} --code {input.code:q}"
        " --output {output.record:q}"
        " > {log:q} 2>&1"


FINAL_TARGETS.extend(results(folder, "provenance.json") for folder in PROVENANCE_FOLDERS)


onstart:
    # Artifacts this run reads but does not rewrite must be intact: a corrupted, truncated or
    # hand-edited file stops the run here, named, before any job can consume it.
    prov.stop_if_inputs_changed(workflow, PRODUCED, RESULTS)
