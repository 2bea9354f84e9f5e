"""Rule dataset_statistics: per-domain statistics table as CSV and LaTeX."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.common.io import read_json, write_text
from personalir.report.datasheet import statistics_frame, statistics_latex


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--products-reports", nargs="+", required=True)
    ap.add_argument("--sentences-reports", nargs="+", required=True)
    ap.add_argument("--reviews-quality", nargs="+", required=True)
    ap.add_argument("--meta-quality", nargs="+", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--tex", required=True)
    args = ap.parse_args()
    log = setup_logging("dataset_statistics")
    per_domain = {}
    for i, domain in enumerate(args.domains):
        per_domain[domain] = {
            "products": read_json(args.products_reports[i]),
            "sentences": read_json(args.sentences_reports[i]),
            "quality_reviews": read_json(args.reviews_quality[i]),
            "quality_meta": read_json(args.meta_quality[i]),
        }
    df = statistics_frame(per_domain)
    write_text(args.csv, df.to_csv(index=False, lineterminator="\n"))
    write_text(args.tex, statistics_latex(df, args.label))
    log.info("\n%s", df.to_string(index=False))


if __name__ == "__main__":
    main()
