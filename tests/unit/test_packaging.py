"""The package as an installable library: its data (schema, default config, the papers'
results) read with importlib.resources from one copy of each file, light extras, no locked
package that nothing uses, and the dev tools in their own lock."""

from __future__ import annotations

import ast
import fnmatch
import importlib.metadata as md
import os
import re
import tomllib
from pathlib import Path

import pytest

from personalir.common.config import (
    DEFAULT_CONFIG,
    PAPER_RESULTS,
    REPO_ROOT,
    RESOURCES,
    SCHEMA_DIR,
    load_schema,
)
from personalir.common.provenance import workflow_requirements

PYPROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]
UNUSED = ("rich", "pyspellchecker", "Levenshtein", "python-Levenshtein")
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([A-Za-z0-9_.+!-]+)$")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def lock(name: str) -> dict[str, str]:
    pins = {}
    for line in (REPO_ROOT / name).read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            match = PIN.match(line)
            assert match, f"{name}: not an exact pin: {line!r}"
            pins[norm(match.group(1))] = match.group(2).split("+", 1)[0]
    return pins


def pins(requirements: list[str]) -> dict[str, str]:
    out = {}
    for req in requirements:
        if req.startswith("personalir["):
            continue
        name, version = req.split("==")
        out[norm(name)] = version
    return out


# --------------------------------------------------------------------------- package data
def test_package_data_are_the_config_files_themselves():
    """One copy of each file: the package's links resolve to config/ of the checkout."""
    assert RESOURCES == SCHEMA_DIR.parent == DEFAULT_CONFIG.parent == PAPER_RESULTS.parent
    for name in ("schema", "config.yaml", "paper_results"):
        link = RESOURCES / name
        assert os.path.islink(link), f"{link} should link to config/{name}"
        assert link.resolve() == (REPO_ROOT / "config" / name).resolve()
    assert load_schema() == load_schema(REPO_ROOT / "config" / "schema")
    assert DEFAULT_CONFIG.read_bytes() == (REPO_ROOT / "config" / "config.yaml").read_bytes()


def test_package_data_patterns_cover_every_file():
    """Every file of the package that is not Python goes into the wheel (links followed)."""
    data = PYPROJECT["tool"]["setuptools"]["package-data"]
    root = REPO_ROOT / "src" / "personalir"
    files = []
    for folder, _, names in os.walk(root, followlinks=True):
        files += [Path(folder, n) for n in names if not n.endswith((".py", ".pyc"))]
    assert len(files) > 15
    missing = []
    for path in files:
        rel = path.relative_to(root)
        covered = False
        for package, patterns in data.items():  # "personalir.validation" -> validation/...
            sub = Path(*package.split(".")[1:])
            if rel.is_relative_to(sub):
                inner = rel.relative_to(sub).as_posix()
                covered |= any(fnmatch.fnmatch(inner, p) for p in patterns)
        if not covered:
            missing.append(rel.as_posix())
    assert not missing, f"not in the wheel: {missing}"


def test_claims_and_evaluate_read_the_package_data():
    from personalir.report import claims
    from personalir.retrieval.byo_args import build_export_parser

    assert claims.PQB_YAML == PAPER_RESULTS / "pqb.yaml"
    assert build_export_parser().get_default("config") == str(DEFAULT_CONFIG)


# --------------------------------------------------------------------------- dependencies
def test_base_install_is_light_and_extras_are_named():
    assert sorted(pins(PROJECT["dependencies"])) == ["jsonschema", "pyyaml"]
    extras = PROJECT["optional-dependencies"]
    assert {"eval", "models", "ttp", "validation", "workflow", "dev"} <= set(extras)
    assert "torch" not in pins(extras["eval"])  # pqb-evaluate on run files needs no torch


def test_unused_packages_are_gone():
    every = [*PROJECT["dependencies"]]
    for reqs in PROJECT["optional-dependencies"].values():
        every += reqs
    assert not {norm(n) for n in UNUSED} & set(pins(every))
    assert "pyspellchecker" not in lock("requirements.lock")  # nothing requires it


def test_unused_packages_are_never_imported():
    modules = {"rich", "spellchecker", "Levenshtein"}
    found = []
    for folder in ("src", "scripts", "workflow_scripts", "tests", "benchmarks"):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = [node.module]
                found += [f"{path}: {n}" for n in names if n.split(".")[0] in modules]
    assert not found


@pytest.mark.parametrize("name", ["rich", "Levenshtein", "python-Levenshtein"])
def test_kept_in_the_lock_because_a_locked_package_requires_it(name):
    locked = lock("requirements.lock")
    assert norm(name) in locked
    needs = []
    for dist in md.distributions():
        if norm(dist.metadata["Name"]) in locked:
            for req in dist.requires or []:
                if "extra ==" not in req and norm(re.split(r"[\s;<>=!~\[(]", req)[0]) == norm(name):
                    needs.append(dist.metadata["Name"])
    assert needs, f"nothing locked requires {name}: remove it from requirements.lock"


def test_every_pin_agrees_with_its_lock():
    runtime, dev = lock("requirements.lock"), lock("requirements-dev.lock")
    assert not set(runtime) & set(dev)
    extras = PROJECT["optional-dependencies"]
    assert pins(extras["dev"]).items() <= dev.items()
    wanted = pins(PROJECT["dependencies"])
    for name, reqs in extras.items():
        if name != "dev":
            wanted |= pins(reqs)
    off = {n: (v, runtime.get(n)) for n, v in wanted.items() if runtime.get(n) != v}
    assert not off, f"pyproject pin vs requirements.lock: {off}"


def test_make_installs_dev_tools_for_tests_only():
    text = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    rules = dict(re.findall(r"^([$()\w.-]+):([^\n=]*)$", text, re.M))
    assert "$(DEV_STAMP)" in rules["test"] and "$(DEV_STAMP)" in rules["lint"]
    assert "DEV_STAMP" not in rules["run"] + rules["setup"]
    dev_recipe = text.split("$(DEV_STAMP): ", 1)[1].split("\n\n", 1)[0]
    assert "-r requirements-dev.lock" in dev_recipe
    stamp_recipe = text.split("$(STAMP): ", 1)[1].split("\n\n", 1)[0]
    assert "requirements-dev" not in stamp_recipe
    # the lock, less its torch line: scripts/torch_build.py installs the build that fits
    assert "requirements.lock > $(VENV)/requirements-without-torch.txt" in stamp_recipe
    assert "-r $(VENV)/requirements-without-torch.txt" in stamp_recipe


def test_provenance_records_the_workflow_extras():
    requires = [
        "PyYAML==6.0.4",
        'numpy==2.4.6; extra == "eval"',
        'personalir[eval]; extra == "models"',
        'torch==2.13.0; extra == "models"',
        'trl==1.16.0; extra == "ttp"',
        'personalir[models]; extra == "ttp"',
        'personalir[ttp]; extra == "workflow"',
        'snakemake==9.27.1; extra == "workflow"',
        'pytest==9.2.0; extra == "dev"',
    ]
    assert workflow_requirements(requires, "personalir") == [
        "PyYAML",
        "numpy",
        "torch",
        "trl",
        "snakemake",
    ]
    # an installation without extras (every requirement a base one) records them all
    assert workflow_requirements(["a==1", "b==2"], "personalir") == ["a", "b"]
