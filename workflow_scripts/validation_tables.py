"""Rule validation_tables: LLM vs human, agreement (CSV + LaTeX), rating distributions."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.validation.tables import make_tables


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--key", required=True)
    ap.add_argument("--judgements", required=True)
    ap.add_argument("--judge-report", required=True)
    ap.add_argument("--labels", required=True)
    ap.add_argument("--agreement", required=True)
    ap.add_argument("--human-report", required=True)
    ap.add_argument("--paper-results", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="validation.agreement")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--label", required=True, help="configuration label for the captions")
    ap.add_argument("--synthetic", choices=["true", "false"], required=True)
    ap.add_argument("--ratings-csv", required=True)
    ap.add_argument("--agreement-csv", required=True)
    ap.add_argument("--ratings-tex", required=True)
    ap.add_argument("--agreement-tex", required=True)
    ap.add_argument("--figure", required=True)
    args = ap.parse_args()
    log = setup_logging("validation_tables")
    ratings, agreement = make_tables(
        key_path=args.key,
        judgements_path=args.judgements,
        human_labels_path=args.labels,
        agreement_path=args.agreement,
        judge_report_path=args.judge_report,
        human_report_path=args.human_report,
        params=args.params,
        seed=args.seed,
        config_label=args.label,
        synthetic=args.synthetic == "true",
        paper_results=args.paper_results,
        ratings_csv=args.ratings_csv,
        agreement_csv=args.agreement_csv,
        ratings_tex=args.ratings_tex,
        agreement_tex=args.agreement_tex,
        figure=args.figure,
    )
    log.info("\n%s\n%s", ratings.to_string(), agreement.to_string())


if __name__ == "__main__":
    main()
