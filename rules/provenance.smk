# Provenance: each results folder records what produced it (config hash, code version, package
# versions, model identifiers) and the sha256 of every artifact in it, in provenance.json.
# Include this module LAST: it follows the targets the other modules added back through the
# rules, so each folder's `provenance` job depends on exactly that folder's artifacts.
# Before a run starts jobs, the artifacts it will read are checked (see `onstart` below).
import os
import re

from snakemake.exceptions import WorkflowError

from personalir.common.config import config_hash
from personalir.common.provenance import (
    artifacts_by_folder,
    check_consumed,
    model_identifiers,
    static_dag,
)

PRODUCED = static_dag(FINAL_TARGETS, workflow.rules)
PROVENANCE_FOLDERS = artifacts_by_folder(PRODUCED, RESULTS)


def _compact(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


rule provenance:
    """Record config hash, code version, packages, models and artifact hashes of one folder."""
    input:
        artifacts=lambda w: [results(w.folder, name) for name in PROVENANCE_FOLDERS[w.folder]],
    output:
        record=results("{folder}", "provenance.json"),
    wildcard_constraints:
        folder="|".join(re.escape(f) for f in PROVENANCE_FOLDERS) or "(?!)",
    params:
        artifacts=lambda w: _compact(PROVENANCE_FOLDERS[w.folder]),
        config_sha256=config_hash(config),
        label=config["label"],
        models=_compact(model_identifiers(config)),
    log:
        "logs/provenance/{folder}.log",
    resources:
        mem_mb=500,
        runtime=10,
    threads: 1
    conda:
        "../envs/provenance.yaml"
    shell:
        "{PY} workflow_scripts/provenance.py --folder $(dirname {output.record})"
        " --artifacts {params.artifacts:q} --config-sha256 {params.config_sha256}"
        " --label {params.label:q} --models {params.models:q} --output {output.record}"
        " > {log} 2>&1"


FINAL_TARGETS.extend(results(folder, "provenance.json") for folder in PROVENANCE_FOLDERS)


def _written_by_job(iofiles):
    """Was this file written by a job Snakemake recorded, and left untouched since?"""

    def check(path):
        record = workflow.persistence.metadata(iofiles[path])
        if record is None or record.incomplete or record.endtime is None:
            return False
        return abs(os.stat(path).st_mtime - record.endtime) < 1e-3

    return check


onstart:
    # Artifacts this run reads but does not rewrite must be intact: a corrupted, truncated or
    # hand-edited file stops the run here, named, before any job could consume it.
    _jobs = list(workflow.dag.needrun_jobs())
    _rewritten = {str(f) for job in _jobs for f in job.output}
    _read = {
        str(f): f
        for job in _jobs
        for f in job.input
        if str(f) not in _rewritten and str(f) in PRODUCED and str(f).startswith(RESULTS + "/")
    }
    _problems = check_consumed(_read, _written_by_job(_read))
    if _problems:
        raise WorkflowError(
            "artifacts changed outside the workflow; not using them:\n  "
            + "\n  ".join(map(str, _problems))
            + "\nDelete them to have the workflow regenerate them, or restore them with"
            " `python scripts/fetch_artifacts.py` (DVC)."
        )
