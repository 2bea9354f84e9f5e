"""Record the sample workflow's artifacts in dvc.lock and push them (`make dvc-update`).

    python scripts/dvc_update.py [--dry-run] [--forcerun OUTPUT ...]

1. Regenerate dvc.yaml from the Snakemake DAG (scripts/dvc_from_snakemake.py).
2. Ask DVC which stages no longer match dvc.lock: a changed command (rule, params, config),
   changed code (the workflow script or a module it imports), changed inputs, or outputs that
   are missing or differ. Snakemake does not rerun a job when imported library code changes,
   so those jobs are forced (`--forcerun` of their outputs; everything downstream follows).
   The recorded outputs' times are set in pipeline order first, so that nothing else reruns.
3. Run the workflow, `dvc commit` every stage, push to the in-repo remote, drop objects no
   longer referenced, and set file times in pipeline order again (DVC rewrites files).

`--forcerun` also rebuilds the named outputs (and everything downstream) although dvc.lock
matches them: for a recorded output that a rerun of its unchanged command no longer reproduces.

Commit dvc.yaml, dvc.lock and dvc-store/ afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess  # nosec B404  # runs dvc/snakemake with argv lists, no shell
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    exe = BIN / name
    return str(exe) if exe.exists() else name


def run(*cmd: str, capture: bool = False) -> subprocess.CompletedProcess:
    print("+", " ".join(cmd[:8]) + (" ..." if len(cmd) > 8 else ""), flush=True)
    env = dict(os.environ, DVC_NO_ANALYTICS="1", PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(  # nosec B603  # argv lists built here (venv tools), no shell
        cmd, cwd=ROOT, env=env, check=True, capture_output=capture, text=True
    )


def stale_outputs() -> list[str]:
    status = json.loads(run(tool("dvc"), "status", "--json", capture=True).stdout or "{}")
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    return [out for name in status if name in stages for out in stages[name]["outs"]]


def prune_lock() -> None:
    """Drop dvc.lock entries of stages that dvc.yaml no longer has (a removed or renamed rule):
    `dvc commit` leaves them, and their outputs would then count as missing artifacts."""
    lock_path = ROOT / "dvc.lock"
    lock = yaml.safe_load(lock_path.read_text(encoding="utf-8"))
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    gone = [name for name in lock["stages"] if name not in stages]
    if gone:
        for name in gone:
            del lock["stages"][name]
        lock_path.write_text(
            yaml.safe_dump(lock, sort_keys=False, width=1_000_000), encoding="utf-8"
        )
        print(f"dvc.lock: dropped {len(gone)} stage(s) no longer in dvc.yaml: {', '.join(gone)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dry-run", action="store_true", help="only list what would be rebuilt")
    ap.add_argument(
        "--forcerun",
        nargs="+",
        default=[],
        metavar="OUTPUT",
        help="also rebuild these recorded outputs (and what depends on them)",
    )
    args = ap.parse_args(argv)
    missing = [out for out in args.forcerun if not (ROOT / out).exists()]
    if missing:
        print(f"--forcerun: no such output: {', '.join(missing)}", file=sys.stderr)
        return 2
    run(sys.executable, "scripts/dvc_from_snakemake.py")
    forced = stale_outputs() if (ROOT / "dvc.lock").exists() else []
    print(f"{len(forced)} outputs of stages that no longer match dvc.lock will be rebuilt")
    forced += [out for out in args.forcerun if out not in forced]
    if (ROOT / "dvc.lock").exists():
        # Times in pipeline order first: after a checkout (or `fetch_artifacts.py`, which
        # leaves times alone when stages are stale) they are in checkout order, and Snakemake
        # would rebuild nearly everything; the stale stages are forced above anyway.
        sys.path.insert(0, str(ROOT / "scripts"))
        from fetch_artifacts import restore_times

        lock = yaml.safe_load((ROOT / "dvc.lock").read_text(encoding="utf-8"))
        dvc_yaml = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))
        print(f"times of {restore_times(dvc_yaml, lock)} recorded outputs set in pipeline order")
    snakemake = [tool("snakemake"), "--profile", "profiles/local"]
    if forced:
        snakemake += ["--forcerun", *forced]
    if args.dry_run:
        run(*snakemake, "-n")
        return 0
    run(*snakemake)
    prune_lock()
    run(tool("dvc"), "commit", "--force", "--quiet")
    run(tool("dvc"), "push", "--quiet", "--remote", "sample")
    run(tool("dvc"), "gc", "--workspace", "--cloud", "--remote", "sample", "--force", "--quiet")
    run(sys.executable, "scripts/fetch_artifacts.py", "--no-pull")
    print("now commit dvc.yaml, dvc.lock and dvc-store/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
