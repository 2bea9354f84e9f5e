"""Rule expected_results: a run's headline values against its expected results file."""

import sys

import _bootstrap  # noqa: F401
from personalir.common.cli import parser
from personalir.report.expected import main as expected_main


def main() -> int:
    ap = parser(__doc__)
    ap.add_argument("--results-dir", required=True)
    ap.add_argument("--expected", required=True, help="config/expected/<configuration>.yaml")
    ap.add_argument("--csv", required=True, help="output: one line per value and its status")
    args = ap.parse_args()
    return expected_main(["check", args.results_dir, args.expected, "--csv", args.csv])


if __name__ == "__main__":
    sys.exit(main())
