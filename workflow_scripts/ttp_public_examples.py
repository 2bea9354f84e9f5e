"""Rule ttp_public_examples: one public set's test searches with selected histories, and its
items (Table 5)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.evaluation.public import build_public_set


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--set", required=True, help="the Table 5 column's name")
    ap.add_argument("--format", required=True, choices=["personalwab", "kuaisearch"])
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--examples", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_public_examples")
    build_public_set(
        fmt=args.format,
        data_dir=args.data_dir,
        name=args.set,
        ttp=args.params,
        max_test=args.params["public"]["max_test"],
        examples_out=args.examples,
        items_out=args.items,
        report_out=args.report,
        log=log.info,
    )


if __name__ == "__main__":
    main()
