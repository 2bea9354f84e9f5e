"""Everything a configuration writes lies under its own results root (``results_dir``).

The workflow's jobs are read from the Snakemake DAG (scripts/dvc_from_snakemake.py, forced, so
every job of ``all``): each output and each log must lie under the configuration's
``results_dir``, so the embedded default and the tiny overlay never write the same path
(artifacts, logs, the paper's generated tables and figures, the PDF). The paper scale's DAG
needs files only a cluster has (GECToR vocabularies, downloads); its root is checked apart.
"""

from __future__ import annotations

import sys

import pytest
import yaml

from personalir.common.config import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))

from dvc_from_snakemake import dag_jobs  # noqa: E402

CONFIGS = {
    "default": ["config/config.yaml"],
    "tiny": ["config/config.yaml", "config/tiny.yaml"],
}
PAPER = ["config/paper.yaml"]


def results_dir(configfiles: list[str]) -> str:
    found = "results"
    for name in configfiles:
        found = yaml.safe_load((REPO_ROOT / name).read_text(encoding="utf-8")).get(
            "results_dir", found
        )
    return found


@pytest.fixture(scope="module")
def written() -> dict[str, dict[str, str]]:
    """Configuration -> {path an output or log of some job: that job's rule}."""
    out = {}
    for name, configfiles in CONFIGS.items():
        out[name] = {
            path: job["rule"]
            for job in dag_jobs(REPO_ROOT, configfiles)
            for path in job["output"] + job["log"]
        }
    return out


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_output_and_log_lies_under_the_results_root(written, name):
    root = results_dir(CONFIGS[name]) + "/"
    outside = sorted(
        f"{rule}: {path}" for path, rule in written[name].items() if not path.startswith(root)
    )
    assert not outside, f"{name}: written outside {root}: {outside[:10]}"
    # The paper's inputs and logs are among them (the rules that used to write beside paper/).
    paths = set(written[name])
    assert f"{root}paper/generated/dataset_statistics.tex" in paths
    assert any(p.startswith(f"{root}logs/") for p in paths)
    assert f"{root}paper/pqb.pdf" in paths and f"{root}paper/ttp.pdf" in paths


def test_configurations_share_no_path(written):
    names = sorted(written)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            shared = sorted(set(written[a]) & set(written[b]))
            assert not shared, f"{a} and {b} both write {shared[:10]}"


def test_roots_differ():
    roots = {name: results_dir(files) for name, files in {**CONFIGS, "paper": PAPER}.items()}
    assert len(set(roots.values())) == len(roots), roots
