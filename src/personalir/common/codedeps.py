"""Which code a workflow job runs: its script plus every local module it imports, transitively.

Standard library only. Two consumers need the same answer:

- ``scripts/dvc_from_snakemake.py`` lists these files as a DVC stage's ``deps``, so DVC reruns
  a stage when code it runs changes;
- the ``provenance`` rule hashes the code behind a folder's artifacts, so a folder's
  ``provenance.json`` changes exactly when code that produced it changes (not when an
  unrelated module is edited).

The walk is static (``ast``): ``import a.b`` and ``from a import b`` inside the ``personalir``
package (under ``src/``) or beside the script (helpers such as ``_bootstrap``), package
``__init__`` files included, plus the plug-in modules a ``Registry`` discovers at run time and
the data files a package it reaches ships (``[tool.setuptools.package-data]`` in
``pyproject.toml``, such as the sample world's domain files): a job reads them as it runs its
code.

The workflow asks for the walk of every rule's script each time Snakemake reads the
Snakefile, a no-op run included. :func:`rules_code_by_rule` keeps the answers in a small JSON
file, valid while no file under ``src/``, no Python file in the scripts' folder and not
``pyproject.toml`` has changed (path, modification time and size of each; a new or removed
module or data file changes them too). The file carries the sha256 of its answers: one that
does not match (a flipped bit that still parses, say a changed file name) is named in a
warning and the walk is done again, never served.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import logging
import os
import re
import tempfile
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path

# A rule's shell command names the workflow script it runs.
SCRIPT = re.compile(r"(?:^|\s)(workflow_scripts/[\w/.-]+\.py)\b")
PYPROJECT = "pyproject.toml"
log = logging.getLogger(__name__)


def _stamp(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return str(path), st.st_mtime_ns, st.st_size


@functools.lru_cache(maxsize=4096)
def _parsed(stamp: tuple[str, int, int]) -> tuple[str, ast.Module]:
    """A file's text and syntax tree, parsed once per version of the file: the workflow
    walks the same modules for every results folder when it starts."""
    path = stamp[0]
    text = Path(path).read_text(encoding="utf-8")
    return text, ast.parse(text, filename=path)


def _module_file(module: str, workdir: Path, script_dir: Path) -> Path | None:
    parts = module.split(".")
    # personalir lives in src/; anything else local is a helper beside the script (_bootstrap).
    base = (workdir / "src" if parts[0] == "personalir" else script_dir) / Path(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    if base.with_suffix(".py").is_file():
        return base.with_suffix(".py")
    return None


def _imported_modules(path: Path, package: str | None) -> frozenset[str]:
    return _imports_of(_stamp(path), package)


@functools.lru_cache(maxsize=4096)
def _imports_of(stamp: tuple[str, int, int], package: str | None) -> frozenset[str]:
    tree = _parsed(stamp)[1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level and package:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            found.add(module)
            # `from personalir.common import io` imports a submodule.
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return frozenset(found)


def _registry_plugins(path: Path, workdir: Path) -> list[Path]:
    """Plug-in modules a registry of this module discovers at run time (not imported by name).

    A ``Registry(..., package="personalir.x", symbol="NAME")`` imports every module of that
    package with a line starting ``@NAME.register(`` when it is first listed
    (personalir.common.registry), so those modules are code the job runs too.
    """
    found: list[Path] = []
    for package, symbol in _registries_of(_stamp(path)):
        marker = re.compile(rf"^@{re.escape(symbol)}\.register\(", re.M)
        folder = workdir / "src" / Path(*package.split("."))
        found += [f for f in sorted(folder.glob("*.py")) if marker.search(_parsed(_stamp(f))[0])]
    return found


@functools.lru_cache(maxsize=4096)
def _registries_of(stamp: tuple[str, int, int]) -> tuple[tuple[str, str], ...]:
    """``(package, symbol)`` of each discovering ``Registry(...)`` a module creates."""
    found = []
    for node in ast.walk(_parsed(stamp)[1]):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Registry"):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        package, symbol = kw.get("package"), kw.get("symbol")
        if isinstance(package, ast.Constant) and isinstance(symbol, ast.Constant):
            found.append((package.value, symbol.value))
    return tuple(found)


@functools.lru_cache(maxsize=16)
def _package_data_globs(stamp: tuple[str, int, int]) -> dict[str, tuple[str, ...]]:
    """``[tool.setuptools.package-data]`` of a ``pyproject.toml``: package -> file globs."""
    with open(stamp[0], "rb") as fh:
        table = tomllib.load(fh).get("tool", {}).get("setuptools", {}).get("package-data", {})
    return {package: tuple(globs) for package, globs in table.items()}


def package_data(package: str, workdir: str | Path) -> list[Path]:
    """The data files ``package`` ships: those its ``pyproject.toml`` globs (and the ``"*"``
    entry's) match under the package's folder in ``src/``, sorted; links to files outside
    ``src/`` (the packaged config) left out."""
    workdir = Path(workdir)
    pyproject = workdir / PYPROJECT
    if not pyproject.is_file():
        return []
    table = _package_data_globs(_stamp(pyproject))
    folder = workdir / "src" / Path(*package.split("."))
    found = {
        p
        for pattern in (*table.get(package, ()), *table.get("*", ()))
        for p in folder.glob(pattern)
        if p.is_file() and "__pycache__" not in p.parts and not _outside(p, workdir / "src")
    }
    return sorted(found)


def _outside(path: Path, src: Path) -> bool:
    """Whether a packaged file is a link to a file outside ``src/``: the package's copies of
    ``config/`` (the schema, the default config, the papers' results). Those are not code: a
    rule reads its settings through its params and the papers' results as explicit inputs,
    so a change to one of them reruns only the jobs that read it."""
    try:
        path.resolve().relative_to(src.resolve())
    except ValueError:
        return True
    return False


def code_deps(script: str, workdir: str | Path) -> list[str]:
    """The script plus every local module it imports, transitively (package __init__s too),
    the plug-in modules its registries discover and the data files of every package it
    reaches; paths relative to ``workdir``, sorted."""
    workdir = Path(workdir)
    script_path = workdir / script
    script_dir = script_path.parent
    seen: set[Path] = set()
    todo: list[tuple[Path, str | None]] = [(script_path, None)]
    while todo:
        path, package = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        if path.is_relative_to(workdir / "src"):
            if path.name == "__init__.py":
                dotted = ".".join(path.parent.relative_to(workdir / "src").parts)
                seen.update(package_data(dotted, workdir))
            for plugin in _registry_plugins(path, workdir):
                rel = plugin.relative_to(workdir / "src").with_suffix("")
                todo.append((plugin, ".".join(rel.parts[:-1])))
        for module in _imported_modules(path, package):
            if not module:
                continue
            parts = module.split(".")
            # Importing a.b.c runs a/__init__, a/b/__init__ too.
            for i in range(1, len(parts) + 1):
                prefix = ".".join(parts[:i])
                found = _module_file(prefix, workdir, script_dir)
                if found is not None and found not in seen:
                    pkg = prefix if found.name == "__init__.py" else ".".join(parts[: i - 1])
                    todo.append((found, pkg or None))
    return sorted(p.relative_to(workdir).as_posix() for p in seen)


def script_of(shellcmd: str | None) -> str | None:
    """The workflow script a rule's shell command runs, if it names one."""
    match = SCRIPT.search(shellcmd or "")
    return match.group(1) if match else None


def rules_code(shellcmds: Iterable[str | None], workdir: str | Path) -> list[str]:
    """The union of the code the given rules' shell commands run (sorted, relative paths)."""
    files: set[str] = set()
    for cmd in shellcmds:
        script = script_of(cmd)
        if script is not None:
            files.update(code_deps(script, workdir))
    return sorted(files)


# Bump when the walk's rules change, so answers a previous version cached are not served.
# 2: the file carries the sha256 of its answers.
CACHE_VERSION = 2


def code_tree_stamp(workdir: str | Path, script_dirs: Iterable[str | Path]) -> str:
    """A digest of every file the walk can read: each file under ``src/`` (modules and
    package data), each ``.py`` of the scripts' folders and ``pyproject.toml``, with its
    modification time and size. Any edit, new or removed module or data file changes it."""
    workdir = Path(workdir)
    src = workdir / "src"
    entries = []
    if (workdir / PYPROJECT).is_file():
        st = os.stat(workdir / PYPROJECT)
        entries.append(f"{PYPROJECT}\t{st.st_mtime_ns}\t{st.st_size}")
    for top in sorted({src, *(workdir / d for d in script_dirs)}):
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for name in sorted(filenames):
                if name.endswith(".py") or Path(dirpath).is_relative_to(src):
                    path = os.path.join(dirpath, name)
                    st = os.stat(path)
                    entries.append(
                        f"{os.path.relpath(path, workdir)}\t{st.st_mtime_ns}\t{st.st_size}"
                    )
    return hashlib.sha256("\n".join(entries).encode()).hexdigest()


def _seal(stamp: str, deps: Mapping[str, list[str]]) -> str:
    """sha256 of the cache's content (version, code tree stamp, answers) in canonical JSON."""
    body = {"version": CACHE_VERSION, "stamp": stamp, "deps": dict(deps)}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _read_cache(cache: Path, stamp: str) -> dict[str, list[str]]:
    """The cached walks if ``cache`` holds this version's answers for this code tree, else {}.

    A file of an older version or of another code tree is simply not used; one that is damaged
    (not JSON, not this shape, or not matching its sha256) is named in a warning."""
    try:
        text = cache.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        return _damaged(cache, f"unreadable ({exc})")
    try:
        saved = json.loads(text)
    except ValueError:
        return _damaged(cache, "not valid JSON")
    if not isinstance(saved, dict):
        return _damaged(cache, "not a JSON object")
    if saved.get("version") != CACHE_VERSION:
        return {}  # another version's answers
    deps = saved.get("deps")
    ok = isinstance(deps, dict) and all(
        isinstance(files, list) and all(isinstance(f, str) for f in files)
        for files in deps.values()
    )
    if not ok or not isinstance(saved.get("stamp"), str):
        return _damaged(cache, "its answers are not lists of file names")
    if saved.get("sha256") != _seal(saved["stamp"], deps):
        return _damaged(cache, "its content does not match its sha256")
    return deps if saved["stamp"] == stamp else {}


def _damaged(cache: Path, why: str) -> dict:
    log.warning("code-dependency cache %s: %s; walking the code again", cache, why)
    return {}


def _write_cache(cache: Path, stamp: str, deps: Mapping[str, list[str]]) -> None:
    """Write the answers atomically; a folder that cannot be written only costs the walk."""
    body = {"version": CACHE_VERSION, "stamp": stamp, "deps": dict(deps)}
    body["sha256"] = _seal(stamp, deps)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=f".{cache.name}.")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(body, out)
        os.replace(tmp, cache)
    except OSError:
        pass


def rules_code_by_rule(
    shellcmds: Mapping[str, str | None], workdir: str | Path, cache: str | Path | None = None
) -> dict[str, list[str]]:
    """For each rule, the code its shell command runs (as :func:`rules_code`).

    With ``cache`` (a JSON file), the walks are read from it when the code tree is unchanged
    (:func:`code_tree_stamp`) and written to it otherwise; the answers are the same either
    way."""
    scripts = {rule: script_of(cmd) for rule, cmd in shellcmds.items()}
    wanted = sorted({s for s in scripts.values() if s is not None})
    if cache is None:
        known = {s: code_deps(s, workdir) for s in wanted}
    else:
        cache = Path(cache)
        stamp = code_tree_stamp(workdir, sorted({Path(s).parent for s in wanted}))
        known = _read_cache(cache, stamp)
        missing = [s for s in wanted if s not in known]
        if missing:
            known = {**known, **{s: code_deps(s, workdir) for s in missing}}
            _write_cache(cache, stamp, known)
    return {rule: list(known[s]) if s is not None else [] for rule, s in scripts.items()}
