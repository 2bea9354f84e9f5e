"""Rule ttp_public_evaluate: HR@20, nDCG@20 and Recall@20 of every public set's runs with
bootstrap CIs, and the paper's claim on them (Table 5)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.evaluation.public import evaluate_public


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--runs", nargs="+", required=True, help="SET:METHOD:PATH")
    ap.add_argument("--examples", nargs="+", required=True, help="SET:PATH")
    ap.add_argument("--paper-results", required=True, help="the TTP paper's values (YAML)")
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument(
        "--cells",
        type=json_arg,
        default=None,
        help="set -> its Table 5 measures (the claim's cells)",
    )
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--per-query", required=True)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--claims", required=True)
    args = ap.parse_args()
    import yaml

    log = setup_logging("ttp_public_evaluate")
    with open(args.paper_results, encoding="utf-8") as fh:
        paper = yaml.safe_load(fh) or {}
    summary = evaluate_public(
        runs=[tuple(spec.split(":", 2)) for spec in args.runs],
        examples=dict(spec.split(":", 1) for spec in args.examples),
        ttp_eval=args.params["evaluation"],
        paper_claims=paper.get("claims") or [],
        seed=args.seed,
        per_query_out=args.per_query,
        summary_out=args.summary,
        claims_out=args.claims,
        cells=args.cells,
        log=log.info,
    )
    log.info("\n%s", summary.to_string())


if __name__ == "__main__":
    main()
