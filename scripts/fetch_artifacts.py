"""Fetch the workflow's artifacts with DVC so that Snakemake finds nothing to do.

    python scripts/fetch_artifacts.py            # dvc pull (default remote) + checks + times
    python scripts/fetch_artifacts.py -r paper   # extra arguments go to `dvc pull`
    python scripts/fetch_artifacts.py --no-pull  # only the checks and the times

`dvc pull` alone is not enough, for two reasons this script handles:

1. **Integrity.** DVC copies an object from its cache into the workspace without re-hashing
   it, so a corrupted or truncated cache file would end up as an artifact. Every pulled file
   is hashed and compared with dvc.lock; a mismatch is named, removed from the workspace and
   from the DVC cache (a rerun re-fetches it from the remote), and the script exits 1.
2. **File times.** DVC keeps content, not modification times, and writes files in no
   particular order, while Snakemake decides what is up to date by comparing times. Once
   everything checks out and `dvc status` confirms that dvc.lock still matches the code and
   commands, the outputs get increasing times in pipeline order (dvc.yaml lists stages in
   topological order, being generated from the Snakemake DAG), after every source input.

If dvc.lock is stale (code or a command changed since the artifacts were recorded) the
script names the stages and exits 1 without touching times: those artifacts were not made by
this code, so Snakemake must not take them as current.
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
STEP_NS = 10_000_000  # 10 ms between consecutive stages


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


def md5_file(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)  # DVC's content hash, compared with dvc.lock
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def locked_outs(lock: dict) -> list[tuple[str, dict]]:
    return [
        (out["path"], out)
        for stage in lock.get("stages", {}).values()
        for out in stage.get("outs", [])
    ]


def cache_object(cache_dir: Path, md5: str) -> Path:
    return cache_dir / "files" / "md5" / md5[:2] / md5[2:]


def verify_outs(lock: dict, cache_dir: Path) -> list[str]:
    """Hash every locked output; remove and name the ones that do not match."""
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
        cached = cache_object(cache_dir, expected)
        if cached.exists():
            cached.chmod(0o644)
            cached.unlink()
        problems.append(
            f"{kind} {path}: {size} bytes, md5 does not match dvc.lock ({out.get('size')} bytes);"
            " removed from the workspace and the DVC cache"
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
    if not args.no_pull:
        proc = dvc("pull", *pull_args, check=False)
        sys.stdout.write(proc.stdout[-2000:])
        if proc.returncode != 0:
            sys.stderr.write(proc.stderr[-4000:])
            print("dvc pull reported errors; checking what arrived", file=sys.stderr)
    lock = yaml.safe_load((ROOT / "dvc.lock").read_text(encoding="utf-8"))
    dvc_yaml = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))
    cache_dir = Path(dvc("cache", "dir").stdout.strip())
    problems = verify_outs(lock, cache_dir)
    if problems:
        print("\n".join(problems))
        print(
            f"{len(problems)} artifact(s) not usable; run this command again to re-fetch them",
            file=sys.stderr,
        )
        return 1
    stale = stale_stages()
    if stale:
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
    print(
        f"{len(locked_outs(lock))} artifacts verified against dvc.lock; times of {n} set in"
        f" pipeline order ({time.perf_counter() - t0:.1f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
