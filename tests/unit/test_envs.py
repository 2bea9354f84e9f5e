"""Per-rule conda environments (envs/*.yaml) agree with the project's lock.

Conda cannot run on the development machines, so the environments are checked statically:
each file parses, names only exactly pinned packages, and every package it shares with
requirements.lock has the lock's version. Every rule's `conda:` names an existing env file.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from personalir.common.config import REPO_ROOT

ENV_FILES = sorted((REPO_ROOT / "envs").glob("*.yaml"))
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
    assert named, "no rule declares a conda env"
    missing = [f"{smk}: {env}" for smk, env in named if not (REPO_ROOT / "rules" / env).is_file()]
    assert not missing, missing
    unused = {p.name for p in ENV_FILES} - {Path(env).name for _, env in named}
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
