"""Check the workflow's recorded outputs (dvc.lock) by content; `make run` runs it around
Snakemake, so a tree with a flipped byte is never reported as up to date.

    python scripts/verify_outputs.py                          # before a run
    python scripts/verify_outputs.py --written-since-ns NS    # after it: accept what it wrote

Every output of the default configuration that dvc.lock records and that is present must be
the recorded file, as the workflow job that wrote it left it, or (after a run) written by that
run; anything else is named (CHANGED or TRUNCATED) and the exit status is 1. Files verified
before and not changed since (size, modification and change times, inode) are not read again,
so a no-op check costs a fraction of a second (personalir.common.tracked).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from personalir.common.tracked import verify_tracked  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--root", default=str(ROOT), help="the workflow folder (default: this one)")
    ap.add_argument(
        "--written-since-ns",
        type=int,
        help="accept files modified at or after this time (ns since the epoch): a run's own",
    )
    args = ap.parse_args(argv)
    root = Path(args.root)
    if not (root / "dvc.lock").is_file():
        print(f"no dvc.lock in {root}: no recorded outputs to check")
        return 0
    found = verify_tracked(root, written_since_ns=args.written_since_ns)
    for problem in found.problems:
        print(problem)
    print(found.summary())
    if found.problems:
        print(
            "These files were changed outside the workflow; nothing reads them as they are. "
            "Restore the recorded ones with `make fetch` (scripts/fetch_artifacts.py), or "
            "delete them and run again to rebuild them.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
