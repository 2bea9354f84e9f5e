"""Rule ttp_table: the Table 4 layout (methods x test sets) as CSV and LaTeX."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import read_json
from personalir.ttp.paper.tables import make_table


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--labels", required=True, help="labels.json of ttp_evaluate")
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--label", required=True, help="configuration label for the caption")
    ap.add_argument(
        "--relevance", nargs="*", default=[], help="ttp_relevance outputs (Relevance column)"
    )
    ap.add_argument("--csv", required=True)
    ap.add_argument("--tex", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_table")
    labels = read_json(args.labels)["labels"]
    table = make_table(
        summary_path=args.summary,
        ttp=args.params,
        labels=labels,
        config_label=args.label,
        csv_out=args.csv,
        tex_out=args.tex,
        relevance_paths=args.relevance,
    )
    log.info("\n%s", table.to_string())


if __name__ == "__main__":
    main()
