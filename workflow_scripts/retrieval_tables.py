"""Rule retrieval_tables: the robustness tables (and effectiveness) as CSV and LaTeX."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.retrieval.metrics import MetricSettings
from personalir.retrieval.summary import read_summary
from personalir.retrieval.tables import write_tables

KEYS = ("flip_rrstd", "degradation", "effectiveness")


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--names", nargs="+", required=True)
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="retrieval.metrics")
    ap.add_argument("--label", required=True, help="configuration label for the captions")
    ap.add_argument("--csv", nargs=3, required=True, metavar=KEYS)
    ap.add_argument("--tex", nargs=3, required=True, metavar=KEYS)
    args = ap.parse_args()
    setup_logging("retrieval_tables")
    write_tables(
        read_summary(args.summary),
        args.names,
        args.domains,
        MetricSettings.from_config(args.params),
        label=args.label,
        csv_paths=dict(zip(KEYS, args.csv, strict=True)),
        tex_paths=dict(zip(KEYS, args.tex, strict=True)),
    )


if __name__ == "__main__":
    main()
