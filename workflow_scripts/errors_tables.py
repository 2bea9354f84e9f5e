"""Rule errors_tables: sampling and correction tables (CSV + LaTeX from the same frames)."""

import pandas as pd

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import read_json, write_text
from personalir.errors.profiles import ProfileSet
from personalir.errors.sampling import user_intervals
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
    ap.add_argument("--sampling-users", nargs="+", required=True, help="per-user outcomes")
    ap.add_argument(
        "--bootstrap", type=json_arg, required=True, help="errors.sampling_eval.bootstrap"
    )
    ap.add_argument("--seed", type=int, required=True, help="used when bootstrap.seed is null")
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
    boot = args.bootstrap
    seed = args.seed if boot["seed"] is None else boot["seed"]
    intervals = user_intervals(
        pd.concat([pd.read_csv(p) for p in args.sampling_users], ignore_index=True),
        args.domains,
        samples=boot["samples"],
        confidence=boot["confidence"],
        seed=seed,
    )
    frame = sampling_frame([pd.read_csv(p) for p in args.sampling_csv], intervals)
    info = read_json(args.sampling_json[0])
    info["attribution"] = info["config"]["attribution"]
    info["bootstrap"] = {**boot, "seed": seed}
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
