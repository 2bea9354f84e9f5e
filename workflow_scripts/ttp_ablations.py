"""Rule ttp_ablations: Tables 6 and 7 and Figure 5 (Recall@20, paired bootstrap CIs) from the
per-query measures."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.evaluation.ablations import run_ablations


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--per-query", required=True)
    ap.add_argument("--paper-results", required=True, help="the TTP paper's values (YAML)")
    ap.add_argument(
        "--params",
        type=json_arg,
        required=True,
        help="{evaluation} of the ttp section",
    )
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--out-dir", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_ablations")
    summary = run_ablations(
        per_query_path=args.per_query,
        paper_path=args.paper_results,
        ttp_eval=args.params["evaluation"],
        seed=args.seed,
        out_dir=args.out_dir,
    )
    log.info("%s", summary)


if __name__ == "__main__":
    main()
