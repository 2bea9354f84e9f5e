"""Rule report_paper_compare: the PQB paper's tables with ours beside them (CSV + LaTeX)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.report.paper_compare import compare_all, figure, write_outputs


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--results-dir", required=True)
    ap.add_argument("--retrieval", type=json_arg, required=True, help="{use, retrievers}")
    ap.add_argument("--paper-results", required=True, help="the PQB paper's YAML")
    ap.add_argument("--label", required=True, help="the configuration's label")
    ap.add_argument("--synthetic", action="store_true", help="the data are the sample world")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--tex", nargs="+", required=True, help="KEY=PATH per paper table")
    ap.add_argument("--figures", nargs="+", required=True, help="NAME=PATH per figure (PDF)")
    args = ap.parse_args()
    log = setup_logging("report_paper_compare")
    tables = compare_all(args.results_dir, {"retrieval": args.retrieval}, args.paper_results)
    tex = dict(item.split("=", 1) for item in args.tex)
    write_outputs(tables, args.csv, tex, args.label, synthetic=args.synthetic)
    for name, path in (item.split("=", 1) for item in args.figures):
        figure(tables, path, label=args.label, name=name)
    for t in tables:
        log.info("%s: %d rows; %s", t.key, len(t.rows), t.note)


if __name__ == "__main__":
    main()
