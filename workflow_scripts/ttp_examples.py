"""Rule ttp_examples: one example set (examples with selected histories, and its items)."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.inputs.examples import build_example_set


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument(
        "--set", required=True, help="example set name (a domain, PersonalWAB or KuaiSearch)"
    )
    ap.add_argument(
        "--source", required=True, choices=["sample_world", "personalwab", "kuaisearch"]
    )
    ap.add_argument("--search-log")
    ap.add_argument("--products")
    ap.add_argument("--meta")
    ap.add_argument("--personalwab-dir")
    ap.add_argument("--kuaisearch-dir")
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--examples", required=True)
    ap.add_argument("--items", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_examples")
    if args.source == "sample_world":
        source_args = {
            "search_log": args.search_log,
            "products": args.products,
            "meta": args.meta,
            "domain": args.set,
            "seed": args.seed,
            "test_share": args.params["split"]["test_share"],
            "validation_share": args.params["split"]["validation_share"],
        }
    elif args.source == "personalwab":
        source_args = {"data_dir": args.personalwab_dir, "domain": args.set}
    else:  # KuaiSearch's items file is 2.8 GB: keep the items some session names
        source_args = {
            "data_dir": args.kuaisearch_dir,
            "domain": args.set,
            "items_scope": "sessions",
        }
    build_example_set(
        source=args.source,
        source_args=source_args,
        ttp=args.params,
        examples_out=args.examples,
        items_out=args.items,
        report_out=args.report,
        log=log.info,
    )


if __name__ == "__main__":
    main()
