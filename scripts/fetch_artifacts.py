"""Fetch the workflow's artifacts with DVC so that Snakemake finds nothing to do.

    python scripts/fetch_artifacts.py            # dvc pull (default remote) + checks + times
    python scripts/fetch_artifacts.py -r paper   # extra arguments go to `dvc pull`
    python scripts/fetch_artifacts.py --no-pull  # only the checks and the times

`dvc pull` alone is not enough, for three reasons this script handles:

1. **The in-repo store.** `dvc-store/` (the default remote) is tracked by git. DVC deletes an
   object of its remote that fails its hash while pulling, and says so only at DEBUG level: a
   flipped byte there would cost the repository its copy, and every later pull would report
   the file missing. So before anything runs, every object dvc.lock names is hashed in
   `dvc-store/` (even when the local cache holds an intact copy and no pull would read it);
   a damaged or missing one is named and restored from git (`git checkout -- <object>`) when
   the committed copy is intact. When it cannot be, the script prints the exact command that
   restores it and stops before `dvc pull`, so DVC deletes nothing. Nothing in `dvc-store/`
   is ever deleted or rewritten by this script other than by that restore.
2. **Integrity of the workspace.** DVC copies an object from its cache into the workspace
   without re-hashing it, so a corrupted or truncated cache file would end up as an artifact.
   Every pulled file is hashed and compared with dvc.lock; a mismatch is named and removed from
   the workspace, and its DVC cache object too when that object is itself damaged (an intact
   cache object is kept); the script exits 1, and a rerun re-fetches it.
3. **File times.** DVC keeps content, not modification times, and writes files in no
   particular order, while Snakemake decides what is up to date by comparing times. Once
   everything checks out and `dvc status` confirms that dvc.lock still matches the code and
   commands, the outputs get increasing times in pipeline order (dvc.yaml lists stages in
   topological order, being generated from the Snakemake DAG), after every source input.

If dvc.lock is stale (code or a command changed since the artifacts were recorded) the
script names the stages and exits 1 without touching times: those artifacts were not made by
this code, so Snakemake must not take them as current.

Files it verified are recorded for `scripts/verify_outputs.py` (which `make run` runs), so the
first run after a fetch does not hash them again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess  # nosec B404  # runs dvc with an argv list, no shell
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from personalir.common.tracked import Locked, md5_file, record_verified  # noqa: E402

STEP_NS = 10_000_000  # 10 ms between consecutive stages
STORE = "dvc-store"  # the in-repo remote `sample` (.dvc/config), tracked by git


def dvc(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("dvc")
    env = dict(os.environ, DVC_NO_ANALYTICS="1")
    return subprocess.run(  # nosec B603  # venv's dvc; args are list items, no shell
        [str(exe) if exe.exists() else "dvc", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=check,
    )


def locked_outs(lock: dict) -> list[tuple[str, dict]]:
    return [
        (out["path"], out)
        for stage in lock.get("stages", {}).values()
        for out in stage.get("outs", [])
    ]


def cache_object(cache_dir: Path, md5: str) -> Path:
    return cache_dir / "files" / "md5" / md5[:2] / md5[2:]


def _git(*args: str, text: bool = True) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(  # nosec B603 B607  # git with an argv list, no shell
            ["git", *args], cwd=ROOT, capture_output=True, text=text, check=False
        )
    except FileNotFoundError:  # no git: nothing can be restored from it
        return subprocess.CompletedProcess(["git", *args], 127, b"" if not text else "", "")


def _md5_bytes(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def store_objects(lock: dict) -> dict[str, str]:
    """``{object path relative to the repository: md5}`` of every file dvc.lock names."""
    return {
        f"{STORE}/files/md5/{out['md5'][:2]}/{out['md5'][2:]}": out["md5"]
        for _, out in locked_outs(lock)
        if out.get("md5") and not out["md5"].endswith(".dir")
    }


def committed_copy_intact(rel: str, md5: str, commit: str = "HEAD") -> bool:
    """Whether git's copy of a store object at ``commit`` holds the right bytes."""
    shown = _git("show", f"{commit}:{rel}", text=False)
    return shown.returncode == 0 and _md5_bytes(shown.stdout) == md5


def intact_commit(rel: str, md5: str) -> str | None:
    """The latest commit before HEAD whose copy of a store object is intact, if any."""
    commits = _git("rev-list", "HEAD", "--", rel).stdout.split()
    return next((c for c in commits if committed_copy_intact(rel, md5, c)), None)


def check_store(lock: dict, cache_dir: Path) -> tuple[list[str], list[str], list[str]]:
    """Hash every object of the in-repo store that dvc.lock names; restore a damaged or
    missing one from git where the committed copy is intact.

    Returns what was restored, what is still damaged and what is still missing, each with
    the command that restores it. Nothing in the store is deleted."""
    restored, damaged, missing = [], [], []
    for rel, md5 in sorted(store_objects(lock).items()):
        path = ROOT / rel
        if path.is_file():
            got = md5_file(path)
            if got == md5:
                continue
            what = f"CORRUPT {rel}: md5 {got}, its name says {md5}"
        else:
            what = f"MISSING {rel}"
        if committed_copy_intact(rel, md5):
            done = _git("checkout", "--", rel)
            if done.returncode == 0 and path.is_file() and md5_file(path) == md5:
                restored.append(f"{what}; restored from git (git checkout -- {rel})")
                continue
            damaged.append(f"{what}; `git checkout -- {rel}` failed: {done.stderr.strip()}")
            continue
        cached = cache_object(cache_dir, md5)
        older = intact_commit(rel, md5)
        if older is not None:
            fix = f"git checkout {older} -- {rel}   (that commit's copy is intact; commit it)"
        elif cached.is_file() and md5_file(cached) == md5:
            fix = f"cp {cached} {rel}   (the local DVC cache holds an intact copy; commit it)"
        else:
            fix = (
                "no intact copy here (git history, DVC cache): rebuild the artifact with "
                "`make dvc-update` on a tree where it is intact, or fetch the object from "
                "another clone"
            )
        line = f"{what}; git's committed copy is not intact either. Restore it: {fix}"
        (damaged if path.is_file() else missing).append(line)
    return restored, damaged, missing


def pulls_from_store(pull_args: list[str]) -> bool:
    """Whether `dvc pull` with these arguments reads the in-repo store (the default remote)."""
    for i, arg in enumerate(pull_args):
        if arg in ("-r", "--remote") and i + 1 < len(pull_args):
            return pull_args[i + 1] == "sample"
        if arg.startswith("--remote="):
            return arg.split("=", 1)[1] == "sample"
    return True


def verify_outs(lock: dict, cache_dir: Path) -> list[str]:
    """Hash every locked output; remove and name the ones that do not match (and their cache
    object only when that is damaged too: an intact one is what the rerun checks out)."""
    problems = []
    for path, out in locked_outs(lock):
        f = ROOT / path
        if out.get("md5", "").endswith(".dir"):
            continue  # directory outputs: DVC checks them entry by entry
        if not f.is_file():
            problems.append(f"MISSING {path}")
            continue
        size, expected = f.stat().st_size, out["md5"]
        if size == out.get("size") and md5_file(f) == expected:
            continue
        kind = "TRUNCATED" if size < out.get("size", 0) else "CORRUPT"
        f.unlink()
        where = "the workspace"
        cached = cache_object(cache_dir, expected)
        in_store = cached.resolve().is_relative_to((ROOT / STORE).resolve())
        if cached.is_file() and not in_store and md5_file(cached) != expected:
            cached.chmod(0o644)
            cached.unlink()
            where += " and the DVC cache (its object was damaged too)"
        problems.append(
            f"{kind} {path}: {size} bytes, md5 does not match dvc.lock ({out.get('size')} bytes);"
            f" removed from {where}"
        )
    return problems


def stale_stages() -> dict:
    proc = dvc("status", "--json", check=False)
    if proc.returncode != 0:
        raise SystemExit(f"dvc status failed:\n{proc.stderr}")
    return json.loads(proc.stdout or "{}")


def restore_times(dvc_yaml: dict, lock: dict) -> int:
    """Outputs newer than every source input, and each stage newer than the stages before."""
    outs = {p for p, _ in locked_outs(lock)}
    sources = {
        dep
        for stage in dvc_yaml["stages"].values()
        for dep in stage.get("deps", [])
        if dep not in outs and (ROOT / dep).exists()
    }
    base = max([time.time_ns()] + [(ROOT / s).stat().st_mtime_ns for s in sources])
    base -= STEP_NS * (len(dvc_yaml["stages"]) + 1)  # end at about now, never in the future
    base = max([base] + [(ROOT / s).stat().st_mtime_ns + STEP_NS for s in sources])
    n = 0
    for i, stage in enumerate(dvc_yaml["stages"].values(), start=1):
        t = base + i * STEP_NS
        for out in stage.get("outs", []):
            path = ROOT / (out if isinstance(out, str) else next(iter(out)))
            if path.exists():
                os.utime(path, ns=(t, t))
                n += 1
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--no-pull", action="store_true", help="skip `dvc pull`")
    args, pull_args = ap.parse_known_args(argv)
    t0 = time.perf_counter()
    lock = yaml.load(  # nosec B506  # a safe loader (C or Python)
        (ROOT / "dvc.lock").read_text(encoding="utf-8"),
        Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader),
    )
    cache_dir = Path(dvc("cache", "dir").stdout.strip())
    missing: list[str] = []  # store objects absent and not restorable: nothing to protect
    if pulls_from_store(pull_args):
        restored, damaged, missing = check_store(lock, cache_dir)
        for line in restored + damaged + missing:
            print(line)
        if damaged:
            print(
                f"{len(damaged)} object(s) of {STORE}/ damaged, and git's committed copy too: "
                "restore them with the commands above, then run this command again. "
                f"`dvc pull` was not run (it would delete them from {STORE}/).",
                file=sys.stderr,
            )
            return 1
    if not args.no_pull:
        proc = dvc("pull", *pull_args, check=False)
        sys.stdout.write(proc.stdout[-2000:])
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-4000:])
            print("dvc pull reported errors; checking what arrived", file=sys.stderr)
    dvc_yaml = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))
    problems = verify_outs(lock, cache_dir)
    if problems and not args.no_pull:
        # Once more for what was removed: an intact cache object is checked out again, a
        # removed one fetched again from the remote.
        print("\n".join(problems))
        again = [line.split()[1].rstrip(":") for line in problems]
        print(f"fetching {len(again)} artifact(s) again", file=sys.stderr)
        dvc("pull", *pull_args, *again, check=False)
        problems = verify_outs(lock, cache_dir)
    if problems:
        print("\n".join(problems))
        print(
            f"{len(problems)} artifact(s) not usable; run this command again to re-fetch them",
            file=sys.stderr,
        )
        return 1
    verified = {
        p: Locked(p, o["md5"], o.get("size"))
        for p, o in locked_outs(lock)
        if not o["md5"].endswith(".dir")
    }
    stale = stale_stages()
    if stale:
        record_verified(ROOT, verified)
        for name, changes in stale.items():
            print(f"STALE {name}: {json.dumps(changes)}")
        print(
            "dvc.lock does not match the current code/commands: these artifacts were not made by"
            " this code, so their times are left alone (Snakemake will rebuild what it must)."
            " Maintainers: `make dvc-update`.",
            file=sys.stderr,
        )
        return 1
    n = restore_times(dvc_yaml, lock)
    record_verified(ROOT, verified)
    print(
        f"{len(locked_outs(lock))} artifacts verified against dvc.lock; times of {n} set in"
        f" pipeline order ({time.perf_counter() - t0:.1f} s)"
    )
    if missing:
        print(
            f"{len(missing)} object(s) missing from {STORE}/ (a fresh clone cannot fetch them): "
            "restore them with the commands above",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
