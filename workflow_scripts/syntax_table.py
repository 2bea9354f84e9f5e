"""Rule syntax_table: per-domain attribution results -> CSV and LaTeX tables (+ rule stats)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.syntax.tables import run_table


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--summaries", nargs="+", required=True)
    ap.add_argument("--parse-reports", nargs="+", required=True)
    ap.add_argument("--feature-reports", nargs="+", required=True)
    ap.add_argument("--label", required=True)
    outs = ("csv", "tex", "paper_tex", "stats_csv", "stats_tex", "paper_stats_tex")
    for name in outs:
        ap.add_argument("--" + name.replace("_", "-"), required=True)
    args = ap.parse_args()
    log = setup_logging("syntax_table")
    for name in ("summaries", "parse_reports", "feature_reports"):
        if len(getattr(args, name)) != len(args.domains):
            ap.error(f"--{name.replace('_', '-')} needs one file per domain")
    table = run_table(
        args.domains,
        args.summaries,
        args.parse_reports,
        args.feature_reports,
        {k: getattr(args, k) for k in outs},
        args.label,
    )
    log.info("\n%s", table[["domain", "model", "balanced", "auroc", "full_profile"]].to_string())


if __name__ == "__main__":
    main()
