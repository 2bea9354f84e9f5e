"""scripts/fetch_artifacts.py and the in-repo DVC store (dvc-store/, tracked by git), on a
small DVC project made here with the real `dvc` and `git`: a damaged store object is named and
restored from git, never deleted; damage is found even when the local cache is intact; an
object git cannot restore stops the fetch before `dvc pull`, with the command that restores
it; an intact cache object is never deleted beside a damaged workspace file."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from personalir.common.config import REPO_ROOT
from personalir.common.tracked import STATE_DIR, STATE_NAME

from .small_run import BIN, env

pytestmark = [pytest.mark.integration]
CONTENT = {"results/a.txt": "alpha " * 300, "results/b.txt": "beta " * 200}
MAKE = "from pathlib import Path\nPath('results').mkdir(exist_ok=True)\n" + "".join(
    f"Path({p!r}).write_text({t!r})\n" for p, t in CONTENT.items()
)
DVC_YAML = """stages:
  make:
    cmd: python make.py
    deps:
    - make.py
    outs:
    - results/a.txt
    - results/b.txt
"""


def _run(cmd: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return _run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd)


def _md5(path: Path) -> str:
    return hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A committed DVC project whose artifacts are pushed to its in-repo store."""
    root = tmp_path_factory.mktemp("dvc_project") / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(REPO_ROOT / "scripts" / "fetch_artifacts.py", root / "scripts")
    (root / "src").symlink_to(REPO_ROOT / "src")
    (root / "make.py").write_text(MAKE)
    (root / "dvc.yaml").write_text(DVC_YAML)
    _git(root, "init", "-q")
    dvc = str(BIN / "dvc")
    _run([dvc, "init", "-q"], root)
    _run([dvc, "config", "core.analytics", "false"], root)
    _run([dvc, "remote", "add", "-d", "sample", "dvc-store"], root)  # from here: ./dvc-store
    _run([dvc, "repro", "-q"], root)
    _run([dvc, "push", "-q"], root)
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "artifacts recorded")
    return root


@pytest.fixture
def clone(project, tmp_path) -> Path:
    """The project as a fresh clone has it: no workspace artifacts, no DVC cache."""
    dest = tmp_path / "repo"
    shutil.copytree(project, dest, symlinks=True)
    shutil.rmtree(dest / "results")
    shutil.rmtree(dest / ".dvc" / "cache")
    return dest


def _fetch(root: Path, *args: str) -> subprocess.CompletedProcess:
    return _run([sys.executable, "scripts/fetch_artifacts.py", *args], root, check=False)


def _store_object(root: Path, rel: str) -> Path:
    md5 = hashlib.md5(CONTENT[rel].encode(), usedforsecurity=False).hexdigest()
    return root / "dvc-store" / "files" / "md5" / md5[:2] / md5[2:]


def _damage(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x04
    path.chmod(0o644)
    path.write_bytes(bytes(data))


def test_a_fresh_clone_fetches_and_records_what_it_verified(clone):
    proc = _fetch(clone)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 artifacts verified against dvc.lock" in proc.stdout
    assert (clone / "results/a.txt").read_text() == CONTENT["results/a.txt"]
    assert (clone / STATE_DIR / STATE_NAME).is_file()  # make run reads none of them again


def test_a_damaged_store_object_is_named_and_restored_from_git(clone):
    """The reproduction: DVC deleted the repository's copy of a damaged object (at DEBUG
    level), and every later fetch said MISSING."""
    obj = _store_object(clone, "results/a.txt")
    _damage(obj)
    proc = _fetch(clone)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rel = obj.relative_to(clone).as_posix()
    assert f"CORRUPT {rel}: md5 " in proc.stdout
    assert f"restored from git (git checkout -- {rel})" in proc.stdout
    assert obj.is_file() and _md5(obj) == obj.parent.name + obj.name
    assert _git(clone, "status", "--porcelain", "dvc-store").stdout == ""
    assert (clone / "results/a.txt").read_text() == CONTENT["results/a.txt"]


def test_store_damage_is_found_when_the_local_cache_is_intact(clone):
    """The reproduction: with the local cache intact, fetch exited 0 and the damaged store
    object stayed hidden."""
    assert _fetch(clone).returncode == 0
    obj = _store_object(clone, "results/b.txt")
    _damage(obj)
    proc = _fetch(clone, "--no-pull")
    rel = obj.relative_to(clone).as_posix()
    assert f"CORRUPT {rel}" in proc.stdout and "restored from git" in proc.stdout
    assert proc.returncode == 0 and _md5(obj) == obj.parent.name + obj.name


def test_an_object_git_cannot_restore_stops_before_dvc_pull(clone):
    first = _git(clone, "rev-parse", "HEAD").stdout.strip()
    obj = _store_object(clone, "results/a.txt")
    _damage(obj)
    _git(clone, "commit", "-qam", "a damaged object committed")
    damaged = obj.read_bytes()
    proc = _fetch(clone)
    rel = obj.relative_to(clone).as_posix()
    assert proc.returncode == 1
    assert f"CORRUPT {rel}" in proc.stdout
    assert f"Restore it: git checkout {first} -- {rel}" in proc.stdout
    assert "`dvc pull` was not run" in proc.stderr
    assert obj.read_bytes() == damaged  # the repository's copy is left as it is
    assert not (clone / "results").exists()  # nothing was pulled
    # The printed command restores it; then the fetch succeeds.
    _git(clone, "checkout", first, "--", rel)
    assert _fetch(clone).returncode == 0


def test_an_intact_cache_object_is_kept_beside_a_damaged_workspace_file(clone):
    """The reproduction: the fetch deleted intact cache objects beside damaged ones."""
    assert _fetch(clone).returncode == 0
    work = clone / "results/a.txt"
    st = work.stat()
    _damage(work)
    os.utime(work, ns=(st.st_atime_ns, st.st_mtime_ns))
    md5 = (
        _store_object(clone, "results/a.txt").parent.name
        + _store_object(clone, "results/a.txt").name
    )
    cached = clone / ".dvc" / "cache" / "files" / "md5" / md5[:2] / md5[2:]
    assert cached.is_file()
    proc = _fetch(clone, "--no-pull")
    assert proc.returncode == 1
    assert "CORRUPT results/a.txt" in proc.stdout and "removed from the workspace" in proc.stdout
    assert cached.is_file() and _md5(cached) == md5  # intact: kept
    proc = _fetch(clone)  # checked out again from the intact cache
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert work.read_text() == CONTENT["results/a.txt"]


def test_a_missing_store_object_is_restored_from_git(clone):
    obj = _store_object(clone, "results/b.txt")
    obj.unlink()
    proc = _fetch(clone)
    rel = obj.relative_to(clone).as_posix()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"MISSING {rel}; restored from git (git checkout -- {rel})" in proc.stdout
    assert _md5(obj) == obj.parent.name + obj.name


def test_a_store_object_removed_in_git_is_named_and_the_fetch_fails(clone):
    """Nothing to protect from `dvc pull` (so it runs, from the intact local cache), but a
    fresh clone could not fetch the file: named, with the command, and the exit status is 1."""
    assert _fetch(clone).returncode == 0
    first = _git(clone, "rev-parse", "HEAD").stdout.strip()
    obj = _store_object(clone, "results/b.txt")
    rel = obj.relative_to(clone).as_posix()
    _git(clone, "rm", "-q", rel)
    _git(clone, "commit", "-qm", "an object removed")
    proc = _fetch(clone)
    assert proc.returncode == 1
    assert f"MISSING {rel}; git's committed copy is not intact either" in proc.stdout
    assert f"Restore it: git checkout {first} -- {rel}" in proc.stdout
    assert "2 artifacts verified against dvc.lock" in proc.stdout  # the workspace is fine
    assert "missing from dvc-store/" in proc.stderr
