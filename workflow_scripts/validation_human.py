"""Rule validation_human: import (or simulate) annotations, adjudicate, agreement."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.validation.stage import human_labels


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--human-items", required=True)
    ap.add_argument("--assignment", required=True)
    ap.add_argument("--judgements", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="validation human + agreement")
    ap.add_argument("--dimensions", nargs="+", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--simulated", required=True)
    ap.add_argument("--annotations", required=True)
    ap.add_argument("--labels", required=True)
    ap.add_argument("--adjudication", required=True, help="the adjudicator's open rows (CSV)")
    ap.add_argument("--agreement", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("validation_human")
    report = human_labels(
        human_items_path=args.human_items,
        assignment_path=args.assignment,
        judgements_path=args.judgements,
        human_cfg=args.params["human"],
        agreement_cfg=args.params["agreement"],
        dimensions=args.dimensions,
        seed=args.seed,
        simulated_out=args.simulated,
        annotations_out=args.annotations,
        labels_out=args.labels,
        adjudication_out=args.adjudication,
        agreement_out=args.agreement,
        report_out=args.report,
    )
    log.info(
        "%s: %d annotations, labels %s",
        report["source"],
        report["annotations"],
        report["label_status"],
    )


if __name__ == "__main__":
    main()
