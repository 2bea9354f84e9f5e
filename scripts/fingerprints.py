"""Compute or check the fingerprints of a results tree.

    python scripts/fingerprints.py RESULTS_DIR --stage data            # check
    python scripts/fingerprints.py RESULTS_DIR --stage data --update   # rewrite expectations

Expectations live in tests/fingerprints/sample_<stage>.json.

Fingerprints (record counts plus records at fixed positions) are checked in, so a change in
any artifact of the sample workflow shows up as a readable diff.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from personalir.common.fingerprint import (  # noqa: E402
    STAGE_PATTERNS,
    diff_fingerprints,
    fingerprint_tree,
)
from personalir.common.io import write_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("results", type=Path)
    ap.add_argument("--stage", choices=sorted(STAGE_PATTERNS), required=True)
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()
    args.expected = ROOT / "tests" / "fingerprints" / f"sample_{args.stage}.json"
    actual = fingerprint_tree(args.results, STAGE_PATTERNS[args.stage])
    if args.update:
        write_text(args.expected, json.dumps(actual, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(actual)} fingerprints to {args.expected}")
        return 0
    expected = json.loads(args.expected.read_text(encoding="utf-8"))
    problems = diff_fingerprints(expected, actual)
    for p in problems:
        print("FAIL", p)
    print(f"{len(actual) - len(problems)} OK, {len(problems)} FAIL")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
