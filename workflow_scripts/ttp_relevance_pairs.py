"""Rule ttp_relevance_pairs: one example set's Relevance set (graded query-item pairs)."""

import json

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.common.io import write_json, write_jsonl
from personalir.ttp.inputs.data import read_examples
from personalir.ttp.inputs.relevance_set import build_relevance_pairs, read_relevance_pairs


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--file", help="a configured Relevance set (JSON Lines)")
    ap.add_argument("--examples", help="the set's examples (built sets)")
    ap.add_argument("--truth", help="the sample world's planted truth (built sets)")
    ap.add_argument(
        "--params", type=json_arg, required=True, help="{relevance_test: ...} of the ttp section"
    )
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--pairs", required=True)
    ap.add_argument("--report", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_relevance_pairs")
    if args.file:
        pairs = read_relevance_pairs(args.file)
        report = {"source": args.file, "pairs": len(pairs)}
    elif args.examples and args.truth:
        with open(args.truth, encoding="utf-8") as fh:
            products = json.load(fh)["products"]
        pairs, report = build_relevance_pairs(
            read_examples(args.examples),
            products,
            per_level=args.params["relevance_test"]["per_level"],
            seed=args.seed,
        )
        report = {"source": "sample world (planted product types)", **report}
    else:
        raise SystemExit("ttp_relevance_pairs: give --file, or --examples and --truth")
    write_jsonl(args.pairs, (p.to_record() for p in pairs))
    write_json(args.report, report)
    log.info("%d pairs: %s", len(pairs), report)


if __name__ == "__main__":
    main()
