"""Rule ttp_claims: the TTP paper's claims (Tables 4-8, Figures 5 and 6) evaluated on the
per-query measures, one verdict each."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.evaluation.claims import run_claims


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--per-query", required=True)
    ap.add_argument("--paper-results", required=True, help="the TTP paper's values (YAML)")
    ap.add_argument(
        "--params",
        type=json_arg,
        required=True,
        help="{evaluation, student, history} of the ttp section",
    )
    ap.add_argument("--relevance", nargs="*", default=[], help="ttp_relevance outputs")
    ap.add_argument("--history-sweep", help="the history-length sweep's per-query measures")
    ap.add_argument("--public-claims", help="ttp_public_evaluate's claims (Table 5)")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_claims")
    statuses = run_claims(
        per_query_path=args.per_query,
        paper_path=args.paper_results,
        ttp_eval=args.params["evaluation"],
        seed=args.seed,
        out_path=args.out,
        relevance_paths=args.relevance,
        teacher=args.params["student"]["teacher"],
        history_sweep_path=args.history_sweep,
        main_n=args.params["history"]["n"],
        public_claims_path=args.public_claims,
    )
    log.info("%s", statuses)


if __name__ == "__main__":
    main()
