"""Rule ttp_table3: the test sets' statistics (TTP paper, Table 3), ours beside the paper's,
as CSV and LaTeX."""

import _bootstrap  # noqa: F401
from personalir.common.cli import json_arg, parser, setup_logging
from personalir.ttp.paper.table3 import make_table3


def named_sets(names, examples, items, what):
    """``(name, examples, items)`` triples from three parallel lists, checked."""
    if not len(names) == len(examples) == len(items):
        raise SystemExit(
            f"{what}: {len(names)} names, {len(examples)} example files and {len(items)} item "
            "files; give one of each per set, in the same order"
        )
    return list(zip(names, examples, items, strict=True))


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--sets", nargs="+", required=True, help="TTP example set names")
    ap.add_argument("--examples", nargs="+", required=True, help="their examples.jsonl")
    ap.add_argument("--items", nargs="+", required=True, help="their items.parquet")
    ap.add_argument("--public-sets", nargs="*", default=[], help="public (Table 5) set names")
    ap.add_argument("--public-examples", nargs="*", default=[])
    ap.add_argument("--public-items", nargs="*", default=[])
    ap.add_argument("--relevance", nargs="*", default=[], help="relevance/pairs.jsonl files")
    ap.add_argument("--params", type=json_arg, required=True, help="the `ttp` config section")
    ap.add_argument("--label", required=True, help="configuration label for the caption")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--tex", required=True)
    args = ap.parse_args()
    log = setup_logging("ttp_table3")
    table = make_table3(
        ttp_sets=named_sets(args.sets, args.examples, args.items, "--sets"),
        public_sets=named_sets(
            args.public_sets, args.public_examples, args.public_items, "--public-sets"
        ),
        relevance_paths=args.relevance,
        paper_path=args.params["paper_reference"],
        source=args.params["source"],
        public=(args.params["public"] or {}).get("sets") or {},
        config_label=args.label,
        csv_out=args.csv,
        tex_out=args.tex,
    )
    log.info("\n%s", table.to_string())


if __name__ == "__main__":
    main()
