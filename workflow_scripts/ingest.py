"""Rule ingest: one raw JSONL(.gz) file -> typed Parquet, quarantine file, quality report."""

import sys
from pathlib import Path

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import write_json, write_text
from personalir.data.ingest import ingest_meta, ingest_reviews, require_records
from personalir.data.ingest_schema import IngestError


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--table", choices=["reviews", "meta"], required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--params", type=json_arg, required=True)
    ap.add_argument("--output", required=True)
    ap.add_argument("--quality", required=True)
    ap.add_argument("--quarantine", required=True)
    args = ap.parse_args()
    log = setup_logging("ingest")
    fn = ingest_reviews if args.table == "reviews" else ingest_meta
    try:
        # The keys of data.ingest (the schema admits no other) are the function's settings.
        report = fn(args.input, args.output, quarantine_path=args.quarantine, **args.params)
    except IngestError as exc:
        log.error("%s", exc)
        sys.exit(f"ingest failed (policy {args.params['policy']}): {exc}")
    try:
        require_records(report, args.input)
    except ValueError as exc:
        log.error("%s", exc)
        sys.exit(f"ingest refused: {exc}")
    if not Path(args.quarantine).exists():  # nothing was quarantined
        write_text(args.quarantine, "")
    for warning in report["warnings"]:
        log.warning("%s: %s", args.input, warning)
    write_json(args.quality, report)
    log.info("%s", report)


if __name__ == "__main__":
    main()
