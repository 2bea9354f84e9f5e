"""Rule errors_edits: (sentence, correction) pairs -> ERRANT edits with mechanism and context."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import read_parquet_table, write_json, write_parquet
from personalir.errors.stage import run_edits


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--corrections", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the errors.edits section")
    ap.add_argument("--edits", required=True)
    ap.add_argument("--words", required=True)
    ap.add_argument("--report", required=True)
    ap.add_argument("--bootstrap", type=json_arg, required=True, help="errors.statistics.bootstrap")
    ap.add_argument("--seed", type=int, required=True, help="used when bootstrap.seed is null")
    args = ap.parse_args()
    log = setup_logging("errors_edits")
    edits, words, report = run_edits(
        read_parquet_table(args.corrections).to_pandas(),
        args.params,
        bootstrap=args.bootstrap,
        seed=args.seed,
    )
    write_parquet(args.edits, edits)
    write_parquet(args.words, words)
    write_json(args.report, report)
    log.info(
        "%d edits (%d character-level) in %d corrected sentences; %.2f edits / 1k words",
        report["edits"],
        report["char_level_edits"],
        report["sentences_corrected"],
        report["edits_per_1000_words"] or 0.0,
    )


if __name__ == "__main__":
    main()
