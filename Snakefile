# Workflow glue only: load and validate the config, include the rule modules, define `all`.
# Every computation lives in the `personalir` package, called by thin workflow_scripts/.
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "src"))

from personalir.common.config import ConfigError, load_schema, validate_config  # noqa: E402
from personalir.common.config_paths import config_files_by_precedence  # noqa: E402
from personalir.common.numerics import pin_cpu_isa  # noqa: E402

# The same float arithmetic on any x86-64 machine: torch, MKL, oneDNN and OpenBLAS capped to
# AVX2 kernels before any job starts; every job inherits the pins (personalir.common.numerics).
CPU_ISA_PINS = pin_cpu_isa()

configfile: "config/config.yaml"

# The files in the order they win: the last --configfile first, the configfile directive last.
_config_files = config_files_by_precedence(
    workflow.configfiles, workflow.config_settings.configfiles or []
)
try:
    config.update(
        validate_config(
            dict(config),
            load_schema(),
            sources=[(f, Path(f).read_text(encoding="utf-8")) for f in _config_files],
            # What --config set (overwrite_config also holds the --configfile contents).
            command_line=dict(workflow.config_settings.config),
        )
    )
except ConfigError as exc:
    sys.exit(f"Configuration error: {exc}")

from personalir.workflow.support import config_conflicts  # noqa: E402

# Stages that need a product catalogue stop the run here, before any job, when there is none.
if _conflicts := config_conflicts(config):
    sys.exit("Configuration error:\n  " + "\n  ".join(_conflicts))

DOMAINS = config["domains"]
RESULTS = config["results_dir"]
# Everything a configuration writes lies under its results root, so two configurations with
# different roots never share a path: artifacts, logs, the paper's generated inputs, the PDF.
LOGS = f"{RESULTS}/logs"
GENERATED = f"{RESULTS}/paper/generated"
# Targets each rule module adds to `all`.
FINAL_TARGETS = []

wildcard_constraints:
    domain="|".join(DOMAINS),

report: "rules/captions/workflow.rst"


include: "rules/common.smk"
include: "rules/data.smk"
include: "rules/errors.smk"
include: "rules/syntax.smk"
include: "rules/queries.smk"
include: "rules/retrieval.smk"
include: "rules/ttp.smk"
include: "rules/ttp_pqb.smk"
include: "rules/validation.smk"
include: "rules/report.smk"
# The paper configuration's dress rehearsal (its inputs; not part of `all`).
include: "rules/rehearsal.smk"
include: "rules/provenance.smk"

rule all:
    default_target: True
    input:
        FINAL_TARGETS,
