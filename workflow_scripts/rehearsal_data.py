"""Rule rehearsal_data: one TTP released set's stand-in files at its released volume
(personalir.rehearsal.data)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import write_json
from personalir.rehearsal.data import write_standin_set


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--spec", type=json_arg, required=True, help="the set's sizes")
    ap.add_argument("--search-log", type=json_arg, required=True, help="sample.search_log")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--min-sentences-per-user", type=int, required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("rehearsal_data")
    report = write_standin_set(
        args.spec,
        seed=args.seed,
        search_log=args.search_log,
        out_dir=args.out_dir,
        min_sentences_per_user=args.min_sentences_per_user,
    )
    write_json(args.report, report)
    log.info("%s", report)


if __name__ == "__main__":
    main()
