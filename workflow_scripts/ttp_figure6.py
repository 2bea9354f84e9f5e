"""Rule ttp_figure6: Recall@20 per test set against the history length (TTP paper, Figure 6)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.ttp.paper.figure6 import make_figure6


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--rows", help="the sweep's figure6.parquet (absent: no sweep configured)")
    ap.add_argument("--paper-results", required=True, help="the TTP paper's values (YAML)")
    ap.add_argument("--main-n", type=int, required=True, help="ttp.history.n")
    ap.add_argument("--label", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--pdf", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_figure6")
    table = make_figure6(
        rows_path=args.rows,
        paper_path=args.paper_results,
        main_n=args.main_n,
        config_label=args.label,
        csv_out=args.csv,
        pdf_out=args.pdf,
    )
    log.info("\n%s", table.to_string())


if __name__ == "__main__":
    main()
