"""Rule ttp_figure8: effectiveness against serving latency (TTP paper, Figure 8)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.common.io import read_json
from personalir.ttp.paper.figure8 import make_figure8


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--summary", required=True)
    ap.add_argument("--labels", required=True, help="labels.json of ttp_evaluate")
    ap.add_argument("--latency", default="", help="the serving benchmark's JSON ('': none)")
    ap.add_argument("--cached-infos", nargs="*", default=[], help="ttp_cached run infos")
    ap.add_argument("--teacher", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--pdf", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_figure8")
    rows = make_figure8(
        summary_path=args.summary,
        latency_path=args.latency or None,
        cached_infos=args.cached_infos,
        labels=read_json(args.labels)["labels"],
        teacher=args.teacher,
        config_label=args.label,
        csv_out=args.csv,
        pdf_out=args.pdf,
    )
    log.info("\n%s", rows.to_string())


if __name__ == "__main__":
    main()
