"""Rule report_claims_table: the PQB claims' verdicts as a LaTeX table for the paper."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.report.claims_table import make_claims_table


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--claims", required=True, help="results/report/claims.csv")
    ap.add_argument("--label", required=True, help="the configuration's label")
    ap.add_argument("--tex", required=True)
    args = ap.parse_args()
    log = setup_logging("report_claims_table")
    log.info(
        "\n%s", make_claims_table(claims_csv=args.claims, config_label=args.label, tex_out=args.tex)
    )


if __name__ == "__main__":
    main()
