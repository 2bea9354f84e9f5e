"""Rule ttp_history_examples: one set's examples for one history length of the sweep."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.evaluation.history_sweep import build_point_examples


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--examples", required=True, help="the set's examples (ttp_examples)")
    ap.add_argument("--items", required=True)
    ap.add_argument(
        "--params", type=json_arg, required=True, help="{split, history, items} at this N"
    )
    ap.add_argument("--output", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_history_examples")
    build_point_examples(
        examples_path=args.examples,
        items_path=args.items,
        ttp=args.params,
        examples_out=args.output,
        report_out=args.report,
        log=log.info,
    )


if __name__ == "__main__":
    main()
