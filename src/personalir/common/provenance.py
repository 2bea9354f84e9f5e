"""Provenance and integrity of artifacts: what produced a results folder, and is it intact.

Two things live here, both standard-library only (so the `provenance` rule needs no
dependencies of its own):

- **Provenance records.** Every results folder gets a ``provenance.json``: the config hash and
  label, a hash of the workflow code itself, Python and package versions, the model
  identifiers named in the config, and the sha256 and size of every artifact in the folder
  with the rule that wrote it. Records hold no times, host names or git commits (the commit
  and whether the code had edits go to the rule's log), so two runs of the same code and
  config write the same bytes.
- **Manifests.** ``sha256sum``-format files (``<hex>  <path>``) of a whole results tree, and a
  verifier that names each missing, truncated or changed file.

What the workflow's ``provenance`` rules need from Snakemake (the static DAG of the files it
produces, per folder, and the integrity check before a run) is in
:mod:`personalir.common.provenance_workflow`.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import re
import subprocess  # nosec B404  # runs git with an argv list, no shell
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from personalir.common.io import CorruptArtifact, log_run_facts, sha256_file, written_record
from personalir.common.numerics import ISA_PINS

PROVENANCE_NAME = "provenance.json"
# 2: the code's hash only (the git commit went to the run log); 3: cpu_kernels;
# 4: the code hash covers the code that produced the folder (listed), not all workflow code.
RECORD_VERSION = 4
# Workflow code whose bytes define what the pipeline computes (relative to the workflow dir).
CODE_GLOBS = ("Snakefile", "rules/**/*.smk", "workflow_scripts/**/*.py", "src/personalir/**/*.py")
MODEL_KEY = re.compile(r"(^|_)(model|models|checkpoint|encoder|tokenizer)(_|$|s$)", re.I)


# --------------------------------------------------------------------------- hashing
def file_record(path: str | os.PathLike) -> dict[str, Any]:
    """sha256 and size of a file; a directory output is hashed over its sorted files."""
    path = Path(path)
    if path.is_dir():
        digest = hashlib.sha256()
        size = 0
        subs = (p for p in path.rglob("*") if p.is_file())
        # Hidden files (writers' records and temporary files) are not part of the output.
        subs = (p for p in subs if not any(x.startswith(".") for x in p.relative_to(path).parts))
        for sub in sorted(subs):
            rel = sub.relative_to(path).as_posix()
            digest.update(f"{rel}\0{sha256_file(sub)}\n".encode())
            size += sub.stat().st_size
        return {"sha256": digest.hexdigest(), "bytes": size, "kind": "directory"}
    return {"sha256": sha256_file(path), "bytes": path.stat().st_size}


# --------------------------------------------------------------------------- provenance
def _git(workdir: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(  # nosec B603 B607  # the user's git on PATH, argv list
            ["git", "-C", str(workdir), *args],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def code_files(workdir: str | os.PathLike) -> list[Path]:
    workdir = Path(workdir)
    files = {p for pattern in CODE_GLOBS for p in workdir.glob(pattern) if p.is_file()}
    return sorted(p for p in files if "__pycache__" not in p.parts)


def code_version(
    workdir: str | os.PathLike, files: Iterable[str | os.PathLike] | None = None
) -> dict[str, Any]:
    """Git commit (if any), whether the workflow code differs from it, and a hash of the code.

    ``code_sha256`` is the hash of the code itself (paths and bytes), so it identifies the code
    even outside a git checkout or with uncommitted edits. ``files`` (relative to ``workdir``)
    limits it to the code that produced something (personalir.common.codedeps); by default
    it covers all workflow code (``CODE_GLOBS``).
    """
    workdir = Path(workdir)
    digest = hashlib.sha256()
    paths = code_files(workdir) if files is None else sorted({workdir / f for f in files})
    for path in paths:
        digest.update(f"{path.relative_to(workdir).as_posix()}\0{sha256_file(path)}\n".encode())
    # The workflow dir's repository; else that of the package actually imported (a copy of
    # the workflow that links the repository's src/, as the integration tests make).
    package_dir = Path(__file__).resolve().parents[1]
    commit, repo = None, None
    for candidate in (workdir, package_dir):
        commit = _git(candidate, "rev-parse", "HEAD")
        if commit:
            repo = candidate
            break
    dirty = None
    if repo is not None:
        top = _git(repo, "rev-parse", "--show-toplevel")
        paths = ["Snakefile", "rules", "workflow_scripts", "src"]
        status = _git(Path(top or repo), "status", "--porcelain", "--", *paths)
        dirty = bool(status) if status is not None else None
    return {"git_commit": commit, "git_dirty": dirty, "code_sha256": digest.hexdigest()}


#: The extra of pyproject.toml that holds everything the workflow runs.
WORKFLOW_EXTRA = "workflow"


def workflow_requirements(requires: Iterable[str], distribution: str) -> list[str]:
    """Names of the base requirements and of those of :data:`WORKFLOW_EXTRA` and the extras it
    names (``personalir[eval,models]``), from a distribution's ``Requires-Dist`` lines."""
    parsed = []
    for req in requires:
        name = re.split(r"[\s;<>=!~\[(]", req, maxsplit=1)[0]
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", req)
        named = re.match(r"[^\[;]*\[([^\]]*)\]", req)
        wanted = set(named.group(1).replace(" ", "").split(",")) if named else set()
        parsed.append((name, extra.group(1) if extra else None, wanted))
    extras, grown = {WORKFLOW_EXTRA}, True
    while grown:  # the extras the workflow's extra names, and theirs
        before = len(extras)
        for name, extra, wanted in parsed:
            if name == distribution and extra in extras:
                extras |= wanted
        grown = len(extras) > before
    return [n for n, extra, _ in parsed if n != distribution and extra in (None, *extras)]


def package_versions(distribution: str = "personalir") -> dict[str, str]:
    """Versions of the project's pinned direct dependencies, those of the workflow's extra
    included (plus the project and Python)."""
    versions = {"python": sys.version.split()[0]}
    names: list[str] = []
    try:
        versions[distribution] = importlib.metadata.version(distribution)
        requires = importlib.metadata.requires(distribution) or []
        names = workflow_requirements(requires, distribution)
    except importlib.metadata.PackageNotFoundError:
        pass
    names.append("snakemake")
    for name in sorted(set(names), key=str.lower):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def model_identifiers(config: Any, prefix: str = "") -> dict[str, Any]:
    """Every config value whose key names a model (``model``, ``*_model``, ``models``, ...)."""
    found: dict[str, Any] = {}
    if isinstance(config, Mapping):
        for key, value in config.items():
            path = f"{prefix}.{key}" if prefix else str(key)
            if MODEL_KEY.search(str(key)) and isinstance(value, (str, list)):
                found[path] = value
            else:
                found.update(model_identifiers(value, path))
    elif isinstance(config, list):
        for i, value in enumerate(config):
            found.update(model_identifiers(value, f"{prefix}[{i}]"))
    return found


def provenance_record(
    folder: str | os.PathLike,
    artifacts: Mapping[str, str],
    *,
    config_hash: str,
    label: str,
    models: Mapping[str, Any],
    workdir: str | os.PathLike = ".",
    code: Iterable[str] | None = None,
) -> dict[str, Any]:
    """The provenance of one results folder; ``artifacts`` maps file name -> producing rule.

    ``code`` lists the code files (relative to ``workdir``) that produced the artifacts; the
    record hashes those, so editing unrelated code does not change it. ``None``: all code.
    """
    folder = Path(folder)
    records = {name: file_record(folder / name) for name in sorted(artifacts)}
    changed = [
        f"{folder / name}: {problem.kind}, {problem.detail}"
        for name in sorted(artifacts)
        if (problem := changed_since_written(folder / name, records[name]))
    ]
    if changed:
        raise CorruptArtifact(
            "not recording artifacts whose bytes changed after their rule wrote them:\n  "
            + "\n  ".join(changed)
            + "\nRestore or rebuild them."
        )
    code_list = None if code is None else sorted({Path(f).as_posix() for f in code})
    code = code_version(workdir, code_list)
    # Which commit ran, and whether it had edits, differ between runs of the same code (a
    # later commit, a fresh clone): the run's log keeps them; the record keeps the code's hash.
    log_run_facts(folder / PROVENANCE_NAME, {k: v for k, v in code.items() if k != "code_sha256"})
    return {
        "record_version": RECORD_VERSION,
        "folder": folder.as_posix(),
        "config": {"label": label, "sha256": config_hash},
        "code": {
            "code_sha256": code["code_sha256"],
            "files": code_list if code_list is not None else "all workflow code",
        },
        "packages": package_versions(),
        # The CPU kernel pins the job ran under (personalir.common.numerics): results
        # computed under other kernels round differently.
        "cpu_kernels": {k: os.environ.get(k) for k in sorted(ISA_PINS)},
        "models": dict(sorted(models.items())),
        "artifacts": {name: {"rule": artifacts[name], **records[name]} for name in records},
    }


# --------------------------------------------------------------------------- verification
@dataclass(frozen=True)
class Problem:
    path: str
    kind: str  # missing | truncated | changed | extra | unreadable | unverifiable
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind.upper()} {self.path}" + (f": {self.detail}" if self.detail else "")


def compare(
    path: Path,
    expected: Mapping[str, Any],
    shown: str | None = None,
    actual: Mapping[str, Any] | None = None,
) -> Problem | None:
    """Check one file against its recorded sha256/size; None when intact."""
    shown = shown or str(path)
    if not path.exists():
        return Problem(shown, "missing")
    actual = actual or file_record(path)
    size = expected.get("bytes")
    if actual["sha256"] == expected["sha256"]:
        return None
    if size is not None and actual["bytes"] < size:
        return Problem(shown, "truncated", f"{actual['bytes']} of {size} bytes")
    detail = f"sha256 {actual['sha256'][:12]}..., recorded {expected['sha256'][:12]}..."
    return Problem(shown, "changed", detail)


def changed_since_written(
    path: Path, actual: Mapping[str, Any] | None = None, shown: str | None = None
) -> Problem | None:
    """A file that is still the one its writer created (same inode or mtime) but no longer
    holds its writer's bytes (or None).

    Only files written through :func:`personalir.common.io.atomic_path` have such a record.
    """
    expected = written_record(path)
    if expected is None:
        return None
    return compare(path, expected, shown, actual)


def read_provenance(folder: str | os.PathLike) -> dict[str, Any] | None:
    path = Path(folder) / PROVENANCE_NAME
    if not path.exists():
        return None
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def verify_folder(
    folder: str | os.PathLike, relative_to: str | os.PathLike | None = None
) -> tuple[list[Problem], int]:
    """Check every artifact a folder's provenance.json records (full sha256).

    Returns the problems (paths shown relative to ``relative_to`` if given) and how many
    artifacts were checked.
    """
    folder = Path(folder)

    def shown(path: Path) -> str:
        return Path(os.path.relpath(path, relative_to) if relative_to else path).as_posix()

    try:
        record = read_provenance(folder)
    except (OSError, ValueError) as exc:
        return [Problem(shown(folder / PROVENANCE_NAME), "unreadable", str(exc))], 0
    if record is None:
        return [Problem(shown(folder / PROVENANCE_NAME), "missing")], 0
    artifacts = record.get("artifacts", {})
    problems = []
    for name, expected in artifacts.items():
        problem = compare(folder / name, expected, shown(folder / name))
        if problem:
            problems.append(problem)
    return problems, len(artifacts)


def provenance_folders(root: str | os.PathLike) -> list[Path]:
    return sorted(p.parent for p in Path(root).rglob(PROVENANCE_NAME))


# --------------------------------------------------------------------------- manifests
def default_artifacts(root: str | os.PathLike, results_dir: str = "results") -> list[str]:
    """Every artifact of a workflow tree: the files under its results root (the paper's
    generated tables and figures and the PDF included), paths relative to ``root``.

    Logs (``<results_dir>/logs/``), hidden files (a writer's temporary files are hidden) and
    README files are not artifacts.
    """
    root = Path(root)
    base = root / results_dir
    logs = base / "logs"
    found = []
    if base.is_dir():
        for p in base.rglob("*"):
            rel = p.relative_to(root)
            hidden = any(part.startswith(".") for part in rel.parts)
            if p.is_file() and not hidden and p.name != "README.md" and logs not in p.parents:
                found.append(rel.as_posix())
    return sorted(found)


def build_manifest(root: str | os.PathLike, paths: Iterable[str]) -> dict[str, str]:
    root = Path(root)
    return {p: sha256_file(root / p) for p in sorted(paths)}


def format_manifest(manifest: Mapping[str, str]) -> str:
    """sha256sum's format, so `sha256sum -c` can check it too."""
    return "".join(f"{digest}  {path}\n" for path, digest in sorted(manifest.items()))


def parse_manifest(text: str) -> dict[str, str]:
    manifest = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = re.fullmatch(r"([0-9a-f]{64}) [ *](.+)", line)
        if not match:
            raise ValueError(f"manifest line {lineno}: expected '<sha256>  <path>'")
        manifest[match.group(2)] = match.group(1)
    return manifest


def verify_manifest(
    root: str | os.PathLike, manifest: Mapping[str, str], present: Iterable[str] | None = None
) -> list[Problem]:
    """Compare a tree with a manifest: missing, changed and (if ``present`` given) extra files."""
    root = Path(root)
    problems = []
    for path, digest in sorted(manifest.items()):
        f = root / path
        if not f.is_file():
            problems.append(Problem(path, "missing"))
        elif sha256_file(f) != digest:
            problems.append(Problem(path, "changed", f"{f.stat().st_size} bytes now"))
    if present is not None:
        for path in sorted(set(present) - set(manifest)):
            problems.append(Problem(path, "extra", "not in the manifest"))
    return problems
