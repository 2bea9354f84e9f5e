"""Compute and presentation apart, in the DVC record too.

A table or figure module (``<stage>/tables.py``, ``<stage>/figures.py``, ``common/latex.py``,
``report/``) may be a code dependency of presentation steps only, so restyling a figure or a
table re-runs only table/figure rules and the PDF, never training or retrieval. DVC decides what
re-runs from each stage's ``deps`` in dvc.yaml (generated from the DAG and the scripts' import
closure by scripts/dvc_from_snakemake.py; tests/integration/test_dvc.py fails when it is stale),
so this reads exactly what ``dvc status`` would report after such a change.

Presentation rules and modules are recognised as
``personalir.workflow.support.is_presentation_rule`` / ``is_presentation_module`` say: rules
``*_table(s)``, ``*_figure(s)``, every rule of ``rules/report.smk`` (statistics table, the PDF)
and ``provenance`` (it records every artifact).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from personalir.workflow import support as ws

REPO = Path(__file__).resolve().parents[2]


def rule_files() -> dict[str, str]:
    """Rule name -> the rules/*.smk file that defines it."""
    found = {}
    for smk in sorted((REPO / "rules").glob("*.smk")):
        for name in re.findall(r"^\s*rule (\w+):", smk.read_text(encoding="utf-8"), re.M):
            found[name] = f"rules/{smk.name}"
    return found


def is_presentation_rule(rule: str) -> bool:
    return ws.is_presentation_rule(rule, rule_files().get(rule, ""))


def stage_rule(stage: str) -> str:
    # dvc_from_snakemake names a stage "<rule>-<wildcard values>"; rule names have no "-".
    return stage.split("-", 1)[0]


@pytest.fixture(scope="module")
def stages() -> dict:
    return yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]


def test_presentation_modules_exist():
    found = [
        p.relative_to(REPO).as_posix()
        for p in (REPO / "src" / "personalir").rglob("*.py")
        if ws.is_presentation_module(p.relative_to(REPO).as_posix())
    ]
    # Every stage that renders tables or figures keeps them in modules of their own.
    for module in (
        "common/latex.py",
        "syntax/tables.py",
        "syntax/figures.py",
        "ttp/paper/tables.py",
    ):
        assert f"src/personalir/{module}" in found


def test_presentation_modules_are_code_deps_of_presentation_steps_only(stages):
    offenders = sorted(
        f"{name}: {dep}"
        for name, stage in stages.items()
        for dep in stage.get("deps", [])
        if ws.is_presentation_module(dep) and not is_presentation_rule(stage_rule(name))
    )
    assert not offenders, (
        "a change to these table/figure modules would re-run compute steps:\n"
        + "\n".join(offenders)
    )


def test_touching_a_figure_module_reruns_only_presentation_steps(stages):
    """The stages `dvc status` lists after `touch src/personalir/syntax/figures.py` & co."""
    for module in ("syntax/figures.py", "ttp/paper/tables.py", "common/latex.py"):
        dep = f"src/personalir/{module}"
        affected = {stage_rule(n) for n, s in stages.items() if dep in s.get("deps", [])}
        assert affected, f"no stage depends on {dep}"
        assert all(is_presentation_rule(r) for r in affected), (module, sorted(affected))


def test_compute_steps_exist_and_are_not_presentation(stages):
    rules = {stage_rule(n) for n in stages}
    for rule in ("ttp_sft", "syntax_encoder", "retrieval_run", "queries_select"):
        assert rule in rules and not is_presentation_rule(rule)


def test_presentation_classification():
    assert ws.is_presentation_module("src/personalir/errors/figures.py")
    assert ws.is_presentation_module("src/personalir/report/paper.py")
    assert not ws.is_presentation_module("src/personalir/report/__init__.py")
    assert not ws.is_presentation_module("src/personalir/common/io.py")
    assert not ws.is_presentation_module("workflow_scripts/ttp_table.py")
    assert ws.is_presentation_rule("ttp_loss_figure") and ws.is_presentation_rule("syntax_table")
    assert ws.is_presentation_rule("ttp_figure8") and ws.is_presentation_rule("ttp_table8")
    assert not ws.is_presentation_rule("ttp_tables_of_contents")
    assert ws.is_presentation_module("src/personalir/ttp/paper/figure8.py")
    assert not ws.is_presentation_module("src/personalir/ttp/evaluation/figure8_data.py")
    assert ws.is_presentation_rule("dataset_statistics", "rules/report.smk")
    assert not ws.is_presentation_rule("ttp_check", "rules/ttp.smk")


def test_dvc_record_includes_plugin_modules_a_registry_discovers(stages):
    """Retriever modules are imported by the registry at run time, not by name: they are
    code deps of every retrieval run all the same, so editing one re-runs the runs."""
    deps = set(stages["retrieval_run-bm25"]["deps"])
    for module in ("lexical", "dense", "sparse", "hybrid", "late_interaction", "rerank"):
        assert f"src/personalir/retrieval/{module}.py" in deps
