"""Rule errors_tables: sampling and correction tables (CSV + LaTeX from the same frames)."""

import pandas as pd

import _bootstrap  # noqa: F401
from personalir.common.cli import parser, setup_logging
from personalir.common.io import read_json, write_text
from personalir.errors.profiles import ProfileSet
from personalir.errors.tables import (
    mechanisms_latex,
    sampling_frame,
    sampling_latex,
    statistics_frame,
    statistics_latex,
)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--sampling-csv", nargs="+", required=True)
    ap.add_argument("--sampling-json", nargs="+", required=True)
    ap.add_argument("--edit-reports", nargs="+", required=True)
    ap.add_argument("--profiles", nargs="+", required=True)
    ap.add_argument("--backends", nargs="+", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--sampling-out-csv", required=True)
    ap.add_argument("--sampling-tex", required=True)
    ap.add_argument("--stats-csv", required=True)
    ap.add_argument("--stats-tex", required=True)
    ap.add_argument("--mechanisms-tex", required=True)
    args = ap.parse_args()
    log = setup_logging("errors_tables")
    frame = sampling_frame([pd.read_csv(p) for p in args.sampling_csv])
    info = read_json(args.sampling_json[0])
    info["attribution"] = info["config"]["attribution"]
    write_text(
        args.sampling_out_csv, frame.to_csv(index=False, lineterminator="\n", float_format="%.6f")
    )
    write_text(args.sampling_tex, sampling_latex(frame, label=args.label, info=info))
    reports = {d: read_json(p) for d, p in zip(args.domains, args.edit_reports, strict=True)}
    profiles = {
        d: ProfileSet.from_json(read_json(p))
        for d, p in zip(args.domains, args.profiles, strict=True)
    }
    stats = statistics_frame(reports, profiles)
    write_text(args.stats_csv, stats.to_csv(index=False, lineterminator="\n"))
    write_text(args.stats_tex, statistics_latex(stats, label=args.label, backends=args.backends))
    write_text(args.mechanisms_tex, mechanisms_latex(stats, label=args.label))
    log.info("\n%s\n%s", frame.to_string(index=False), stats.to_string(index=False))


if __name__ == "__main__":
    main()
