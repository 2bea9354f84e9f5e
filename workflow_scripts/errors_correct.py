"""Rule errors_correct: user sentences -> their corrections by the configured GEC backends."""

import sys

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import read_parquet_table, write_json, write_parquet
from personalir.errors.gec import GECError
from personalir.errors.stage import run_correct


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--sentences", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the errors.gec section")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--corrections", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("errors_correct")
    sentences = read_parquet_table(args.sentences).to_pandas()
    try:
        table, report = run_correct(
            sentences, args.params, threads=args.threads, cache_dir=args.cache_dir
        )
    except GECError as exc:
        sys.exit(f"errors_correct: {exc}")
    write_parquet(args.corrections, table)
    write_json(args.report, report)
    log.info(
        "%d sentences, %d changed, %.1f s (%s sentences/s)",
        report["sentences"],
        report["sentences_changed"],
        report["seconds"],
        report["sentences_per_second"],
    )
    for run in report["runs"]:
        log.info("%s", run)


if __name__ == "__main__":
    main()
