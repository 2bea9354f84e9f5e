"""Compute or check the fingerprints of a results tree.

    python scripts/fingerprints.py RESULTS_DIR --stage data             # check
    python scripts/fingerprints.py RESULTS_DIR --stage data --update    # rewrite expectations
    python scripts/fingerprints.py RESULTS_DIR --stage all --config tiny
    python scripts/fingerprints.py --dvc-store --stage all --update

`--dvc-store` fingerprints the embedded default's outputs recorded in dvc.lock, read from the
in-repo DVC store (dvc-store/), without running anything.

Expectations live in tests/fingerprints/<config>_<stage>.json (`sample`: the embedded
default, `tiny`: config/tiny.yaml).

Fingerprints (record counts plus records at fixed positions) are checked in, so a change in
any artifact of the sample workflow shows up as a readable diff.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from personalir.common.fingerprint import (  # noqa: E402
    STAGE_PATTERNS,
    diff_fingerprints,
    fingerprint_tree,
    link_dvc_outputs,
)
from personalir.common.io import write_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXPECTED_DIR = ROOT / "tests" / "fingerprints"


def expected_path(config: str, stage: str) -> Path:
    return EXPECTED_DIR / f"{config}_{stage}.json"


def check_or_update(results: Path, stages: list[str], config: str, update: bool) -> int:
    failed = 0
    for stage in stages:
        expected_file = expected_path(config, stage)
        actual = fingerprint_tree(results, STAGE_PATTERNS[stage])
        if update:
            text = json.dumps(actual, indent=1, sort_keys=True) + "\n"
            write_text(expected_file, text, record=False)  # a checked-in file, not an artifact
            print(f"wrote {len(actual)} fingerprints to {expected_file}")
            continue
        expected = json.loads(expected_file.read_text(encoding="utf-8"))
        problems = diff_fingerprints(expected, actual)
        for p in problems:
            print(f"FAIL {stage}: {p}")
        print(f"{stage}: {len(actual) - len(problems)} OK, {len(problems)} FAIL")
        failed += bool(problems)
    return 1 if failed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("results", type=Path, nargs="?", help="a results folder")
    ap.add_argument(
        "--dvc-store",
        action="store_true",
        help="fingerprint the outputs recorded in dvc.lock, read from dvc-store/",
    )
    ap.add_argument("--stage", choices=[*sorted(STAGE_PATTERNS), "all"], required=True)
    ap.add_argument("--config", default="sample", help="expectations' prefix (sample, tiny)")
    ap.add_argument("--update", action="store_true")
    args = ap.parse_args()
    if (args.results is None) == (not args.dvc_store):
        ap.error("give either RESULTS_DIR or --dvc-store")
    stages = sorted(STAGE_PATTERNS) if args.stage == "all" else [args.stage]
    if not args.dvc_store:
        return check_or_update(args.results, stages, args.config, args.update)
    with tempfile.TemporaryDirectory() as tmp:
        tree = link_dvc_outputs(ROOT / "dvc.lock", ROOT / "dvc-store", tmp)
        return check_or_update(tree / "results", stages, args.config, args.update)


if __name__ == "__main__":
    sys.exit(main())
