"""Rule ttp_table4_figure: Table 4's Recall@20 per test set as a figure, ours beside the
paper's."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.ttp.paper.table4_figure import plot_file


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--table", required=True, help="results/ttp/table4.csv")
    ap.add_argument("--label", required=True)
    ap.add_argument("--pdf", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_table4_figure")
    sets = plot_file(
        args.table,
        out=args.pdf,
        title=f"Table 4, Recall@20 per test set: ours and the paper's ({args.label})",
    )
    log.info("wrote %s (%s)", args.pdf, ", ".join(sets))


if __name__ == "__main__":
    main()
