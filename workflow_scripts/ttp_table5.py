"""Rule ttp_table5: the public benchmarks' Table 5 (ours beside the paper's) as CSV and LaTeX."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.methods.base import PERSONAL_RETRIEVERS
from personalir.ttp.paper.table5 import make_table5


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--summary", help="ttp_public_evaluate's summary (none: no public sets)")
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--label", required=True, help="configuration label for the caption")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--tex", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_table5")
    methods = args.params["public"]["methods"]
    table = make_table5(
        summary_path=args.summary,
        paper_path=args.params["paper_reference"],
        methods=methods,
        labels={m: PERSONAL_RETRIEVERS.get(m).label for m in methods},
        sets=args.params["public"]["sets"],
        config_label=args.label,
        csv_out=args.csv,
        tex_out=args.tex,
    )
    log.info("\n%s", table.to_string())


if __name__ == "__main__":
    main()
