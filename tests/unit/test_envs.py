"""Per-rule conda environments (envs/*.yaml) agree with the project's lock.

Conda cannot run on the development machines, so the environments are checked statically:
each file parses, names only exactly pinned packages, and every package it shares with
requirements.lock has the lock's version. Every rule's `conda:` names an existing env file.

torch: every env that lists it pins the CPU build from the CPU index, and its CUDA twin
(envs/<stage>-cuda.yaml) is the same file but for torch's CUDA build, a variant that
scripts/torch_build.py knows. `workflow_support.conda_env` gives a rule the twin where the
configuration runs the stage on a GPU (config/paper.yaml) and the CPU env otherwise (the sample),
and every rule that declares a `gpu` resource names its env through it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from personalir.common.config import REPO_ROOT, deep_merge, validate_config
from personalir.workflow.support import (
    CUDA_ENV_STAGES,
    conda_env,
    path_with_interpreter_first,
    put_interpreter_first_on_path,
)

ENV_FILES = sorted((REPO_ROOT / "envs").glob("*.yaml"))
CUDA_TWINS = sorted((REPO_ROOT / "envs").glob("*-cuda.yaml"))
HELPER_CALL = re.compile(r'conda:\s*\n\s*(?:workflow_support\.)?conda_env\(config,\s*"([^"]+)"\)')
CPU_INDEX = "--extra-index-url https://download.pytorch.org/whl/cpu"
# Rule modules whose rules with a `gpu` resource do not yet name their env through conda_env
# (their owner switches them: `conda: workflow_support.conda_env(config, "ttp")`). Strict: a
# module that has switched must leave this set.
PENDING_GPU_ENV: set[str] = set()
CONDA_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==?([A-Za-z0-9_.+!-]+)$")  # name=1.2.3 or name==1.2.3
PIP_PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([A-Za-z0-9_.+!-]+)$")
# Where pip looks is not a package: e.g. the CPU wheel index that keeps a CUDA torch out.
PIP_INDEX_OPTION = re.compile(r"^--(extra-index-url|index-url|find-links)[ =]\S+$")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def public(version: str) -> str:
    """Drop a local version label: the lock's `torch==2.13.0+cpu` is torch 2.13.0."""
    return version.split("+", 1)[0]


def lock_versions() -> dict[str, str]:
    versions = {}
    for line in (REPO_ROOT / "requirements.lock").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            match = PIP_PIN.match(line)
            assert match, f"requirements.lock: not an exact pin: {line!r}"
            versions[normalise(match.group(1))] = public(match.group(2))
    return versions


def env_packages(path: Path) -> list[tuple[str, str, str]]:
    """(manager, name, version) for every dependency; fails on anything not exactly pinned."""
    spec = yaml.safe_load(path.read_text())
    assert isinstance(spec, dict) and isinstance(spec.get("dependencies"), list), path.name
    out = []
    for dep in spec["dependencies"]:
        if isinstance(dep, dict):
            assert set(dep) == {"pip"}, f"{path.name}: unexpected mapping {dep}"
            for req in dep["pip"]:
                if PIP_INDEX_OPTION.match(req.strip()):
                    continue
                match = PIP_PIN.match(req.strip())
                assert match, f"{path.name}: pip requirement not pinned with ==: {req!r}"
                out.append(("pip", match.group(1), match.group(2)))
        else:
            match = CONDA_PIN.match(str(dep).strip())
            assert match and "*" not in dep, f"{path.name}: conda package not pinned: {dep!r}"
            out.append(("conda", match.group(1), match.group(2)))
    return out


def test_there_are_env_files():
    assert ENV_FILES, "no envs/*.yaml"


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_env_file_pins_agree_with_lock(path):
    lock = lock_versions()
    packages = env_packages(path)
    names = [normalise(n) for _, n, _ in packages]
    assert len(names) == len(set(names)), f"{path.name}: a package is listed twice"
    spec = yaml.safe_load(path.read_text())
    assert spec.get("channels"), f"{path.name}: channels must be explicit"
    mismatches = [
        f"{name}: {version} here, {lock[normalise(name)]} in requirements.lock"
        for _, name, version in packages
        if normalise(name) in lock and public(version) != lock[normalise(name)]
    ]
    assert not mismatches, f"{path.name}: " + "; ".join(mismatches)


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.name)
def test_env_python_matches_project(path):
    requires = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"][
        "requires-python"
    ]
    series = re.search(r"(\d+\.\d+)", requires).group(1)
    pythons = [v for _, n, v in env_packages(path) if n == "python"]
    assert pythons, f"{path.name}: no python pin"
    assert pythons[0].startswith(series + "."), f"{path.name}: python {pythons[0]} vs {requires}"


def test_every_rule_names_an_existing_env():
    rule_files = sorted((REPO_ROOT / "rules").glob("*.smk"))
    named = {
        (smk.name, m.group(1))
        for smk in rule_files
        for m in re.finditer(r'conda:\s*\n\s*"([^"]+)"', smk.read_text())
    }
    # conda_env(config, "<stage>") names ../envs/<stage>.yaml or its CUDA twin
    through_helper = {
        (smk.name, f"../envs/{name}{suffix}.yaml")
        for smk in rule_files
        for m in HELPER_CALL.finditer(smk.read_text())
        for name in [m.group(1)]
        for suffix in ("", "-cuda")
        if suffix == "" or name in CUDA_ENV_STAGES
    }
    assert named, "no rule declares a conda env"
    missing = [
        f"{smk}: {env}"
        for smk, env in named | through_helper
        if not (REPO_ROOT / "rules" / env).is_file()
    ]
    assert not missing, missing
    # a twin counts as used with its CPU env while the helper knows its stage
    used = {Path(env).name for _, env in named | through_helper}
    used |= {f"{Path(env).stem}-cuda.yaml" for env in used if Path(env).stem in CUDA_ENV_STAGES}
    unused = {p.name for p in ENV_FILES} - used
    assert not unused, f"env files no rule uses: {sorted(unused)}"


def test_checker_rejects_unpinned_and_mismatched(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("channels: [conda-forge]\ndependencies:\n  - python=3.11.7\n  - numpy\n")
    with pytest.raises(AssertionError, match="not pinned"):
        env_packages(bad)
    bad.write_text("channels: [conda-forge]\ndependencies:\n  - pip:\n      - pandas>=2\n")
    with pytest.raises(AssertionError, match="not pinned"):
        env_packages(bad)
    bad.write_text("channels: [conda-forge]\ndependencies:\n  - pip:\n      - -e ../src\n")
    with pytest.raises(AssertionError, match="not pinned"):
        env_packages(bad)
    off = tmp_path / "off.yaml"
    off.write_text("channels: [conda-forge]\ndependencies:\n  - pip:\n      - numpy==1.0.0\n")
    with pytest.raises(AssertionError, match="numpy: 1.0.0 here"):
        test_env_file_pins_agree_with_lock(off)


# --------------------------------------------------------------------------- torch builds
def cuda_variants() -> dict:
    spec = importlib.util.spec_from_file_location(
        "torch_build", REPO_ROOT / "scripts" / "torch_build.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.CUDA_VARIANTS


def pip_section(path: Path) -> list[str]:
    spec = yaml.safe_load(path.read_text())
    return [r.strip() for dep in spec["dependencies"] if isinstance(dep, dict) for r in dep["pip"]]


def config_of(*names: str) -> dict:
    """The validated configuration of config/<names> laid over each other, as Snakemake merges
    `--configfile` files over config/config.yaml."""
    merged: dict = {}
    for name in names:
        merged = deep_merge(merged, yaml.safe_load((REPO_ROOT / "config" / name).read_text()))
    return validate_config(merged)


@pytest.mark.parametrize(
    "path", [p for p in ENV_FILES if p not in CUDA_TWINS], ids=lambda p: p.name
)
def test_cpu_envs_pin_torchs_cpu_build(path):
    reqs = pip_section(path) if "pip:" in path.read_text() else []
    torch = [r for r in reqs if r.lower().startswith("torch==")]
    if not torch:
        return
    assert torch == [f"torch=={lock_versions()['torch']}+cpu"], f"{path.name}: {torch}"
    assert CPU_INDEX in reqs, f"{path.name}: torch without the CPU index pulls PyPI's CUDA build"


def test_every_cuda_stage_has_a_twin():
    assert CUDA_TWINS, "no envs/*-cuda.yaml"
    assert {p.name.removesuffix("-cuda.yaml") for p in CUDA_TWINS} == set(CUDA_ENV_STAGES)


@pytest.mark.parametrize("twin", CUDA_TWINS, ids=lambda p: p.name)
def test_cuda_twin_is_its_cpu_env_but_torchs_build(twin):
    base = twin.with_name(twin.name.replace("-cuda.yaml", ".yaml"))
    assert base.is_file(), f"{twin.name}: no {base.name}"
    twin_spec, base_spec = yaml.safe_load(twin.read_text()), yaml.safe_load(base.read_text())
    assert twin_spec["channels"] == base_spec["channels"]
    conda_deps = [d for d in twin_spec["dependencies"] if not isinstance(d, dict)]
    assert conda_deps == [d for d in base_spec["dependencies"] if not isinstance(d, dict)]
    torch = [r for r in pip_section(twin) if r.startswith("torch==")]
    assert len(torch) == 1, f"{twin.name}: {torch}"
    version, _, variant = torch[0].removeprefix("torch==").partition("+")
    assert version == lock_versions()["torch"], f"{twin.name}: torch {version}"
    assert variant in cuda_variants(), (
        f"{twin.name}: {variant!r} is no CUDA build torch_build knows"
    )
    index = f"--extra-index-url https://download.pytorch.org/whl/{variant}"
    assert pip_section(twin) == [
        {CPU_INDEX: index, f"torch=={version}+cpu": torch[0]}.get(r, r) for r in pip_section(base)
    ], f"{twin.name}: differs from {base.name} in more than torch's build"
    # Snakemake runs <env>.post-deploy.sh after creating <env>.yaml: the twin's does the same
    hooks = [p.with_name(p.name.replace(".yaml", ".post-deploy.sh")) for p in (twin, base)]
    assert hooks[0].is_file() == hooks[1].is_file(), f"{twin.name}: post-deploy scripts differ"
    if hooks[1].is_file():
        code = [
            [x for x in h.read_text().splitlines() if not x.startswith("#") or x.startswith("#!")]
            for h in hooks
        ]
        assert code[0] == code[1], f"{hooks[0].name} does not do what {hooks[1].name} does"
        assert os.access(hooks[0], os.X_OK) == os.access(hooks[1], os.X_OK)


def test_conda_env_follows_the_configured_device():
    sample = config_of("config.yaml")
    paper = config_of("config.yaml", "paper.yaml")
    stages = sorted(p.stem for p in ENV_FILES if p not in CUDA_TWINS)
    assert {s: conda_env(sample, s) for s in stages} == {s: f"../envs/{s}.yaml" for s in stages}
    expected = {s: f"../envs/{s}{'-cuda' if s in CUDA_ENV_STAGES else ''}.yaml" for s in stages}
    assert {s: conda_env(paper, s) for s in stages} == expected
    assert set(CUDA_ENV_STAGES) == {"errors", "queries", "retrieval", "ttp"}


@pytest.mark.parametrize(
    ("stage", "setting", "cuda"),
    [
        ("ttp", {"ttp": {"device": "auto"}}, True),
        ("ttp", {"ttp": {"device": "cuda:1"}}, True),
        ("ttp", {"ttp": {"device": "cpu"}}, False),
        ("retrieval", {"retrieval": {"device": "cuda:0"}}, True),
        ("retrieval", {"retrieval": {"device": "cpu"}}, False),
        ("queries", {"queries": {"lm": {"device": "cpu"}}}, False),
        ("errors", {"errors": {"gec": {"gector": {"device": "cpu"}}}}, False),
        ("errors", {"errors": {"gec": {"backends": ["symspell"]}}}, False),
        ("errors", {"errors": {"gec": {"backends": ["symspell", "gector"]}}}, True),
    ],
)
def test_conda_env_follows_one_setting(stage, setting, cuda):
    paper = deep_merge(config_of("config.yaml", "paper.yaml"), setting)
    assert conda_env(paper, stage) == f"../envs/{stage}{'-cuda' if cuda else ''}.yaml"


def test_conda_env_refuses_an_unknown_env():
    with pytest.raises(ValueError, match="no environment envs/gpu.yaml"):
        conda_env(config_of("config.yaml"), "gpu")


def rule_blocks(smk: Path) -> list[tuple[str, str]]:
    """(rule name, text) of every rule or checkpoint of a rule module."""
    parts = re.split(r"(?m)^\s*(?:rule|checkpoint)\s+(\w+):", smk.read_text())
    return list(zip(parts[1::2], parts[2::2], strict=True))


def test_rules_with_a_gpu_resource_name_their_env_through_conda_env():
    offenders: dict[str, list[str]] = {}
    gpu_rules = 0
    for smk in sorted((REPO_ROOT / "rules").glob("*.smk")):
        for name, text in rule_blocks(smk):
            if not re.search(r"^\s+gpu=", text, re.M) or "conda:" not in text:
                continue
            gpu_rules += 1
            if not HELPER_CALL.search(text):
                offenders.setdefault(smk.name, []).append(name)
    assert gpu_rules, "no rule declares a gpu resource"
    unexpected = {f: r for f, r in offenders.items() if f not in PENDING_GPU_ENV}
    assert not unexpected, f"rules with a gpu resource and a fixed CPU env: {unexpected}"
    switched = PENDING_GPU_ENV - set(offenders)
    assert not switched, f"now through conda_env: remove {sorted(switched)} from PENDING_GPU_ENV"


def test_gpu_rule_check_sees_a_fixed_env(tmp_path):
    smk = tmp_path / "x.smk"
    smk.write_text(
        'rule a:\n    resources:\n        gpu=1,\n    conda:\n        "../envs/ttp.yaml"\n'
        "rule b:\n    resources:\n        gpu=1,\n    conda:\n"
        '        workflow_support.conda_env(config, "ttp")\n'
    )
    blocks = dict(rule_blocks(smk))
    assert HELPER_CALL.search(blocks["a"]) is None
    assert HELPER_CALL.search(blocks["b"]).group(1) == "ttp"


def test_rules_find_the_interpreter_running_snakemake_first():
    """`.venv/bin/snakemake ...` runs the rules' `python` from that venv without activating it:
    rules/common.smk puts the interpreter's directory first on PATH, once."""
    first = path_with_interpreter_first
    assert first("/usr/bin:/venv/bin:/bin", "/venv/bin/python") == "/venv/bin:/usr/bin:/bin"
    assert first("/usr/bin::/bin", "/v/bin/python3.11") == "/v/bin:/usr/bin:/bin"
    assert first("", "/v/bin/python") == "/v/bin"
    common = (REPO_ROOT / "rules" / "common.smk").read_text()
    assert "workflow_support.put_interpreter_first_on_path()" in common


def test_put_interpreter_first_on_path(monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setattr(sys, "executable", "/venv/bin/python")
    put_interpreter_first_on_path()
    assert os.environ["PATH"] == "/venv/bin:/usr/bin:/bin"
