"""Rule report_claims: every PQB claim checked on this run's tables, the TTP claims beside."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.report.claims import evaluate_all
from personalir.report.claims_output import write_outputs


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--results-dir", required=True)
    ap.add_argument("--retrieval", type=json_arg, required=True, help="{use, retrievers}")
    ap.add_argument("--paper-results", required=True, help="the PQB paper's YAML (its claims)")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--md", required=True)
    args = ap.parse_args()
    log = setup_logging("report_claims")
    claims = evaluate_all(args.results_dir, {"retrieval": args.retrieval}, args.paper_results)
    log.info("\n%s", write_outputs(claims, args.csv, args.md))


if __name__ == "__main__":
    main()
