"""Rule validation_items: blinded validation items, their hidden key, the human sample."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.validation.stage import make_items


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--domains", nargs="+", required=True)
    ap.add_argument("--benchmarks", nargs="+", required=True)
    ap.add_argument("--sentences", nargs="+", required=True)
    ap.add_argument("--edits", nargs="+", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="validation sample + judge")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--human-items", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("validation_items")
    report = make_items(
        domains=args.domains,
        benchmarks=args.benchmarks,
        sentences=args.sentences,
        edits=args.edits,
        params=args.params,
        seed=args.seed,
        items_out=args.items,
        human_items_out=args.human_items,
        key_out=args.key,
        report_out=args.report,
    )
    log.info(
        "%d pairs -> %d judged items, %d in the human sample (%d questions)",
        report["pairs"],
        report["judged_items"],
        report["human_sample"],
        report["questions"],
    )


if __name__ == "__main__":
    main()
